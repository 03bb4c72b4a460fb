"""SQL and DB_CONNECT steps from MySQL/MariaDB clients against a real MariaDB server that the test starts
and stops itself (tests/e2e/mariadbserver.py):
- the C API (libmariadb) through every entry point the agent hooks: txray-test-mysql-client;
- Python's MySQLdb (C over libmariadb): the same SQL rows;
- Python's pymysql (pure Python over a socket): the same rows, from the wire parser (agent/protocols/mysql);
  a libmariadb connection gets no second row from it.
Clients run in process mode: one run = one transaction. Every literal value the clients send contains
"secret"; the store file must not hold one of them."""
import collections
import glob
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "samples"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "samples", "py_orders"))
import orders_data  # noqa: E402
from mariadbserver import MariaDbServer, available  # noqa: E402
from sampletools import Server, orders_bench, orders_call  # noqa: E402
from txraytest import (BIN, Collector, TxrayTestCase, agent_env, bare_env, check_sums, show_json,  # noqa: E402
                       wait_transactions)

CLIENT = os.path.join(BIN, "txray-test-mysql-client")
PY_CLIENT = os.path.join(os.path.dirname(__file__), "mariadb_py_client.py")


def steps_of(tx, kind):
    return [s for s in tx["steps"] if s["kind"] == kind]


def store_bytes(db):
    """Everything the collector wrote: the store file and its journal."""
    data = b""
    for path in glob.glob(db + "*"):
        with open(path, "rb") as f:
            data += f.read()
    return data


# The C client's script (tests/agent/hooks/mysql_client.cpp): text, rows, changes, error (errno sqlstate), binds.
C_SQL = [
    ("CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(?) NOT NULL, balance DECIMAL(?,?), note TEXT)",
     None, 0, None, None),
    ("INSERT INTO accounts VALUES (?, ?, ?, ?), ...", None, 4, None, None),
    ("SELECT id, owner FROM accounts WHERE balance > ? ORDER BY id", 3, None, None, None),
    ("SELECT `id`, `owner` FROM `accounts` ORDER BY id", 4, None, None, None),
    ("UPDATE accounts SET balance = balance - ? WHERE id IN (?+)", None, 3, None, None),
    ("SELECT * FROM no_such_table WHERE k = ?", None, None, (1146, "42S02"), None),
    ("INSERT INTO accounts (id, owner) VALUES (?, ?)", None, None, (1062, "23000"), None),
    ("PREPARE SELECT owner FROM accounts WHERE id >= ? AND owner <> ?", None, None, None, None),
    ("SELECT owner FROM accounts WHERE id >= ? AND owner <> ?", 3, None, None, "int, text"),
    ("SELECT owner FROM accounts WHERE id >= ? AND owner <> ?", 2, None, None, "int, text"),
    ("PREPARE INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)", None, None, None, None),
    ("INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)", None, 1, None, "int, text, null"),
    ("INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)", None, 1, None, "int, text, null"),
    ("INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)", None, 1, None, "int, text, null"),
    ("INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)", None, None, (1062, "23000"), "int, text, null"),
    ("PREPARE SELEKT owner FROM accounts WHERE id = ?", None, None, (1064, "42000"), None),
    ("SELECT COUNT(*) FROM accounts WHERE owner LIKE ?", 1, None, None, None),
]


@unittest.skipUnless(available(), "mariadb-server is not installed (scripts/install-deps.sh)")
class MariaDb(TxrayTestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        cls.server = MariaDbServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def traced_run(self, args, reset, extra=None):
        """Runs args bare and under the agent (process mode, `extra` environment), `reset` SQL before each;
        returns (bare, traced, tx, store bytes)."""
        run = lambda env: subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        self.server.sql(reset)
        bare = run(bare_env())
        self.server.sql(reset)
        with Collector(self.tmp) as col:
            traced = run(agent_env(col.endpoint, mode="process", extra=extra))
            wait_transactions(col.db, 1)
        [tx] = show_json(col.db, "--last", "5")
        check_sums(self, tx)
        return bare, traced, tx, store_bytes(col.db)

    def check_no_literals(self, store):
        self.assertGreater(len(store), 0)
        self.assertNotIn(b"secret", store, "a literal value reached the store")

    def test_c_api_rows_binds_changes_errors(self):
        bare, traced, tx, store = self.traced_run(
            [CLIENT, "127.0.0.1", str(self.server.port), "root", self.server.database], "DROP TABLE IF EXISTS accounts")
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))
        self.assertIn("stmt insert 3: error 1062 23000", bare.stdout)

        sql = steps_of(tx, "SQL")
        self.assertEqual([s["text"] for s in sql], [t for t, *_ in C_SQL])
        self.assertEqual([s.get("rows") for s in sql], [r for _, r, *_ in C_SQL])
        self.assertEqual([s.get("changes") for s in sql], [c for _, _, c, *_ in C_SQL])
        self.assertEqual([s.get("attributes", {}).get("binds") for s in sql], [b for *_, b in C_SQL])
        for s, (text, _, _, err, _) in zip(sql, C_SQL):
            if err:
                self.assertEqual((s.get("status"), s["attributes"]["sqlstate"]), err, text)
                self.assertTrue(s["error"].startswith(f"ERROR {err[0]} ({err[1]}): "), s["error"])
            else:
                self.assertEqual(s["error"], "", text)
        # The server's messages quote values and statement text: masked.
        self.assertEqual(sql[6]["error"], "ERROR 1062 (23000): Duplicate entry ?")
        self.assertTrue(sql[15]["error"].endswith(" near ? at line 1"), sql[15]["error"])
        # One fingerprint per statement whatever the values; the PREPARE row has its own.
        fps = collections.defaultdict(set)
        for s in sql:
            fps[s["text"]].add(s["fingerprint"])
        self.assertTrue(all(len(v) == 1 for v in fps.values()), fps)
        self.assertEqual(tx["sql_count"], len(C_SQL))
        self.assertEqual(tx["sql_ns"], sum(s["elapsed_ns"] for s in sql))
        # Bytes on the connection's socket during each query (TCP): it went out, an answer came back.
        for s in sql:
            if not s["text"].startswith("PREPARE"):
                self.assertGreater(s["bytes_written"], 0, s["text"])
                self.assertGreater(s["bytes_read"], 0, s["text"])
        self.assertGreater(sql[3]["bytes_read"], sql[16]["bytes_read"], "four rows read more than a count")

        bad, good = steps_of(tx, "DB_CONNECT")
        port = self.server.port
        self.assertEqual(bad["text"], f"mysql://nobody@127.0.0.1:{port}/txray")
        self.assertEqual((bad["status"], bad["attributes"]["sqlstate"]), (1045, "28000"))
        self.assertTrue(bad["error"].startswith("ERROR 1045 (28000): Access denied for user ?"), bad["error"])
        self.assertIn("28000", tx["error"])  # the first failure marks the transaction
        self.assertEqual(good["text"], f"mysql://root@127.0.0.1:{port}/txray")
        self.assertEqual(good["error"], "")
        attrs = good["attributes"]
        self.assertEqual((attrs["db.system"], attrs["database"], attrs["port"], attrs["user"]),
                         ("mariadb", "txray", str(port), "root"))
        self.assertIn("MariaDB", attrs["server_version"])
        sockets = [s for s in steps_of(tx, "SOCKET") if s["parent"] == good["no"]]
        self.assertEqual(len(sockets), 1, "the server connection's SOCKET row nests under DB_CONNECT")
        [close] = [s for s in steps_of(tx, "MESSAGE") if s["text"].startswith("mysql_close ")]
        self.assertEqual(close["text"], f"mysql_close mysql://root@127.0.0.1:{port}/txray")
        self.check_no_literals(store)

    def test_c_api_raw_mode_keeps_values(self):
        """TXRAY_SQL=raw: the texts, the bind values as each execution sent them (the buffers are read again
        at every mysql_stmt_execute) and the server's messages, unmasked."""
        bare, traced, tx, store = self.traced_run(
            [CLIENT, "127.0.0.1", str(self.server.port), "root", self.server.database], "DROP TABLE IF EXISTS accounts",
            extra={"TXRAY_SQL": "raw"})
        self.assertEqual((traced.returncode, traced.stdout), (bare.returncode, bare.stdout))
        sql = steps_of(tx, "SQL")
        self.assertEqual(sql[1]["text"][:60], "INSERT INTO accounts VALUES (1, 'o\\'neil-secret-1', 10.50, \"")
        selects = [s for s in sql if s["text"] == "SELECT owner FROM accounts WHERE id >= ? AND owner <> ?"]
        self.assertEqual([s["attributes"]["binds"] for s in selects], ["2, 'bind-secret-6'", "3, 'bind-secret-6'"])
        inserts = [s["attributes"]["binds"] for s in sql if s["text"].startswith("INSERT INTO accounts (id, owner, balance)")]
        self.assertEqual(inserts, ["10, 'stmt-secret-7', NULL", "11, 'stmt-secret-8', NULL",
                                   "12, 'stmt-secret-9', NULL", "1, 'stmt-secret-10', NULL"])
        self.assertEqual(sql[6]["error"], "ERROR 1062 (23000): Duplicate entry '1' for key 'PRIMARY'")
        self.assertIn(b"secret", store)

    def run_python(self, driver):
        table = f"people_{driver.lower()}"
        return self.traced_run(["/usr/bin/python3", PY_CLIENT, driver, str(self.server.port), self.server.database],
                               f"DROP TABLE IF EXISTS {table}")

    def test_python_mysqldb(self):
        bare, traced, tx, store = self.run_python("MySQLdb")
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))
        self.assertEqual(bare.stdout.split("\n")[:6],
                         ["inserted 5", "selected 5", "updated 2", "error 1146", "streamed 4", "done"])
        by_text = {s["text"]: s for s in steps_of(tx, "SQL")}
        t = "people_mysqldb"
        # MySQLdb puts the values into the text itself (client-side quoting): the masking takes them out.
        insert = by_text[f"INSERT INTO {t} (id, name, email) VALUES (?, ?, ?), ..."]
        self.assertEqual(insert["changes"], 5)
        select = by_text[f"SELECT id, name FROM {t} WHERE email LIKE ? ORDER BY id"]
        self.assertEqual(select["rows"], 5)
        update = by_text[f"UPDATE {t} SET name = ? WHERE id IN (?+)"]
        self.assertEqual(update["changes"], 2)
        missing = by_text["SELECT * FROM no_such_table WHERE name = ?"]
        self.assertEqual((missing["status"], missing["attributes"]["sqlstate"]), (1146, "42S02"))
        self.assertEqual(missing["error"], "ERROR 1146 (42S02): Table ? doesn't exist")
        streamed = by_text[f"SELECT name FROM {t} WHERE id > ?"]  # SSCursor: mysql_use_result + fetch_row
        self.assertEqual(streamed["rows"], 4)
        self.assertIn("COMMIT", by_text)  # conn.commit(): mysql_commit runs it through mysql_real_query
        [conn] = steps_of(tx, "DB_CONNECT")
        self.assertEqual(conn["attributes"]["db.system"], "mariadb")
        self.assertIn("42S02", tx["error"])
        self.check_no_literals(store)

    def test_python_pymysql_rows_from_the_wire(self):
        bare, traced, tx, store = self.run_python("pymysql")
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))
        self.assertIn("streamed 4", bare.stdout)
        # pymysql speaks the protocol itself in Python: no libmariadb call; the wire parser
        # (agent/protocols/mysql) gives the rows MySQLdb's hooks give, once each.
        sql = steps_of(tx, "SQL")
        by_text = {s["text"]: s for s in sql}
        t = "people_pymysql"
        insert = by_text[f"INSERT INTO {t} (id, name, email) VALUES (?, ?, ?), ..."]
        self.assertEqual(insert["changes"], 5)
        self.assertEqual(by_text[f"SELECT id, name FROM {t} WHERE email LIKE ? ORDER BY id"]["rows"], 5)
        self.assertEqual(by_text[f"UPDATE {t} SET name = ? WHERE id IN (?+)"]["changes"], 2)
        missing = by_text["SELECT * FROM no_such_table WHERE name = ?"]
        self.assertEqual((missing["status"], missing["attributes"]["sqlstate"]), (1146, "42S02"))
        self.assertEqual(missing["error"], "ERROR 1146 (42S02): Table ? doesn't exist")
        self.assertEqual(by_text[f"SELECT name FROM {t} WHERE id > ?"]["rows"], 4)  # SSCursor: read as it streams
        self.assertEqual([s["text"] for s in sql if s["text"] == f"CREATE TABLE {t} (id INT PRIMARY KEY, "
                          "name VARCHAR(?), email VARCHAR(?))"], [f"CREATE TABLE {t} (id INT PRIMARY KEY, "
                          "name VARCHAR(?), email VARCHAR(?))"], "one row per statement")
        [conn] = steps_of(tx, "DB_CONNECT")
        self.assertEqual(conn["attributes"]["db.system"], "mariadb")
        self.assertIn("42S02", tx["error"])
        self.check_no_literals(store)

    def test_python_mysqldb_rows_once(self):
        """A libmariadb connection is the hooks' alone: the wire parser adds no second row."""
        bare, traced, tx, store = self.run_python("MySQLdb")
        self.assertEqual(bare.returncode, 0, bare.stderr)
        texts = [s["text"] for s in steps_of(tx, "SQL")]
        self.assertEqual(texts.count("SELECT * FROM no_such_table WHERE name = ?"), 1, texts)
        self.assertEqual(texts.count("SELECT name FROM people_mysqldb WHERE id > ?"), 1, texts)
        self.assertEqual(len(steps_of(tx, "DB_CONNECT")), 1)

    def test_orders_sample_on_mariadb(self):
        """samples/orders with --mariadb: loads the tables on first start (bare, not traced),
        then serves under the agent; each request's prepared lookup is an SQL row with its binds, and the
        unpooled service shows a DB_CONNECT (and its PREPAREs) in every request."""
        url = f"mysql://root@127.0.0.1:{self.server.port}/{self.server.database}"
        orders = os.path.join(BIN, "txray-orders")
        loader = Server([orders, "--mariadb", url, "--http", "127.0.0.1:0", "--tcp", "127.0.0.1:0"],
                        channels=("http",), timeout=300)
        self.assertEqual(loader.stop(), 0)
        with Collector(self.tmp) as c:
            n = 0
            for app, extra in (("orders-my-pooled", []), ("orders-my-nopool", ["--no-pool"])):
                server = Server([orders, "--mariadb", url, *extra, "--http", "127.0.0.1:0", "--tcp", "127.0.0.1:0"],
                                channels=("http", "tcp"), env=agent_env(c.endpoint, app=app))
                try:
                    # The same deterministic data as the SQLite file (samples/py_orders/orders_data.py is its twin).
                    got = orders_call("http-binary", "GetOrderStatus", 42, http=server.addr("http"))
                    self.assertEqual(got["status"], orders_data.make_order(42)[3], got)
                    got = orders_call("http-binary", "GetCustomers", 100, 3, http=server.addr("http"))
                    self.assertEqual([tuple(c) for c in got["customers"]],
                                     [orders_data.make_customer(i) for i in (101, 102, 103)])
                    n += 2
                    rows = orders_bench(tcp=server.addr("tcp"), http=server.addr("http"), channels=["http-binary"],
                                        methods=["GetOrderStatus", "GetCustomers50"], clients=1, seconds=0.3, rounds=1)
                finally:
                    self.assertEqual(server.stop(), 0)
                self.assertTrue(all(r["errors"] == 0 for r in rows.values()), rows)
                n += sum(r["calls"] for r in rows.values())
            wait_transactions(c.db, n)
            pooled = show_json(c.db, "--app", "orders-my-pooled", "--last", "100000")
            unpooled = show_json(c.db, "--app", "orders-my-nopool", "--last", "100000")
        status = [s for tx in pooled for s in steps_of(tx, "SQL") if s["text"] == "SELECT status FROM orders WHERE id = ?"]
        self.assertTrue(status, [s["text"] for tx in pooled for s in steps_of(tx, "SQL")])
        self.assertTrue(all(s["rows"] == 1 and s["attributes"]["binds"] == "int" for s in status), status)
        customers = [s for tx in pooled for s in steps_of(tx, "SQL") if s["text"].startswith("SELECT id, name, company")]
        self.assertTrue(customers and all(s["attributes"]["binds"] == "int, int" for s in customers), customers)
        self.assertEqual(sorted(set(s["rows"] for s in customers)), [3, 50])  # the page sizes asked for
        self.assertTrue(all(len(steps_of(tx, "DB_CONNECT")) == 1 for tx in unpooled), "a connection per request")
        self.assertTrue(all(steps_of(tx, "DB_CONNECT")[0]["attributes"]["db.system"] == "mariadb" for tx in unpooled))


if __name__ == "__main__":
    unittest.main()
