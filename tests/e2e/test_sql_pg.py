"""SQL and DB_CONNECT steps from libpq clients (psql, pgbench) against a real PostgreSQL 15 server that the
test starts and stops itself (tests/e2e/pgserver.py). Clients run in process mode: one run = one
transaction."""
import collections
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pgserver import PGBENCH, PSQL, PgServer  # noqa: E402
from txraytest import (Collector, TxrayTestCase, agent_env, bare_env, check_sums, free_port, show_json,  # noqa: E402
                       wait_transactions)


def steps_of(tx, kind):
    return [s for s in tx["steps"] if s["kind"] == kind]


def executions(tx, kind="SQL"):
    """(text -> count, text -> rows) over the rows and the summary (steps folded past the step limit)."""
    count, rows = collections.Counter(), collections.Counter()
    for s in steps_of(tx, kind):
        count[s["text"]] += 1
        rows[s["text"]] += max(s.get("rows") or 0, 0)
    for s in tx.get("summary") or []:
        if s["kind"] == kind:
            count[s["text"]] += s["count"]
            rows[s["text"]] += max(s.get("rows") or 0, 0)
    return count, rows


class PgTestCase(TxrayTestCase):
    pg = None

    @classmethod
    def setUpClass(cls):
        cls.pg = PgServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def psql(self, args, env, **kw):
        return subprocess.run([PSQL, "-X", *self.pg.conn_args(), *args], env=self.pg.client_env(env),
                              capture_output=True, text=True, timeout=300, **kw)

    def traced_run(self, fn):
        """Runs fn(env) bare and under the agent (process mode); returns (bare result, traced result, tx)."""
        bare = fn(bare_env())
        with Collector(self.tmp) as col:
            traced = fn(agent_env(col.endpoint, mode="process"))
            wait_transactions(col.db, 1)
        [tx] = show_json(col.db, "--last", "5")
        check_sums(self, tx)
        return bare, traced, tx


# psql -f script: statement, masked text, rows, changes (None: not a write)
SCRIPT = [
    ("CREATE TEMP TABLE accounts(id int PRIMARY KEY, owner text NOT NULL, balance numeric);",
     "CREATE TEMP TABLE accounts(id int PRIMARY KEY, owner text NOT NULL, balance numeric);", 0, None),
    ("INSERT INTO accounts SELECT g, 'owner-' || g, g * 10.5 FROM generate_series(1, 25) AS g;",
     "INSERT INTO accounts SELECT g, ? || g, g * ? FROM generate_series(?, ?) AS g;", 0, 25),
    ("SELECT id, owner FROM accounts WHERE balance > 100 ORDER BY id;",
     "SELECT id, owner FROM accounts WHERE balance > ? ORDER BY id;", 16, None),
    ("UPDATE accounts SET balance = balance - 1.25 WHERE id IN (1, 2, 3);",
     "UPDATE accounts SET balance = balance - ? WHERE id IN (?+);", 0, 3),
    ("SELECT owner FROM accounts WHERE owner = E'o\\'neil' OR owner = $$x$$;",
     "SELECT owner FROM accounts WHERE owner = ? OR owner = ?;", 0, None),
    ("DELETE FROM accounts WHERE id > 20;", "DELETE FROM accounts WHERE id > ?;", 0, 5),
    ("SELECT count(*), sum(balance) FROM accounts;", "SELECT count(*), sum(balance) FROM accounts;", 1, None),
]


class Psql(PgTestCase):
    def test_file_of_n_statements_gives_n_sql_steps(self):
        path = os.path.join(self.tmp, "script.sql")
        with open(path, "w") as f:
            f.write("\n".join(s for s, *_ in SCRIPT) + "\n")
        bare, traced, tx = self.traced_run(lambda env: self.psql(["-f", path], env))
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))

        sql = steps_of(tx, "SQL")
        self.assertEqual([s["text"] for s in sql], [m for _, m, _, _ in SCRIPT])
        self.assertEqual([s["rows"] for s in sql], [r for _, _, r, _ in SCRIPT])
        self.assertEqual([s.get("changes") for s in sql], [c for *_, c in SCRIPT])  # None: not a write
        self.assertEqual(tx["sql_count"], len(SCRIPT))
        self.assertEqual(tx["sql_ns"], sum(s["elapsed_ns"] for s in sql))
        self.assertEqual(tx["error"], "")
        for s in sql:
            self.assertEqual(s["error"], "")
            # Bytes on the connection's socket during the query: the query went out, an answer came back.
            self.assertGreater(s["bytes_written"], 0, s["text"])
            self.assertGreater(s["bytes_read"], 0, s["text"])
        # The SELECT of 16 rows read more than the one-row count.
        self.assertGreater(sql[2]["bytes_read"], sql[6]["bytes_read"])

        [conn] = steps_of(tx, "DB_CONNECT")
        self.assertEqual(conn["text"], f"postgresql://postgres@127.0.0.1:{self.pg.port}/postgres")
        self.assertEqual(conn["attributes"]["database"], "postgres")
        self.assertEqual(conn["attributes"]["port"], str(self.pg.port))
        self.assertEqual(conn["error"], "")
        self.assertGreater(conn["elapsed_ns"], 0)
        sockets = [s for s in steps_of(tx, "SOCKET") if s["parent"] == conn["no"]]
        self.assertEqual(len(sockets), 1, "the server connection's SOCKET row nests under DB_CONNECT")

    def test_failing_statement_shows_sqlstate_and_fails_the_transaction(self):
        path = os.path.join(self.tmp, "bad.sql")
        with open(path, "w") as f:
            f.write("SELECT 1;\nSELECT * FROM no_such_relation;\nSELECT 2;\n")
        bare, traced, tx = self.traced_run(lambda env: self.psql(["-f", path], env))
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))
        sql = steps_of(tx, "SQL")
        self.assertEqual([s["text"] for s in sql], ["SELECT ?;", "SELECT * FROM no_such_relation;", "SELECT ?;"])
        self.assertEqual(sql[1]["attributes"]["sqlstate"], "42P01")
        self.assertEqual(sql[1]["error"], 'ERROR 42P01: relation "no_such_relation" does not exist')
        self.assertEqual([s["error"] for s in (sql[0], sql[2])], ["", ""])
        self.assertIn("42P01", tx["error"])

    def test_psql_c_division_by_zero(self):
        bare, traced, tx = self.traced_run(lambda env: self.psql(["-c", "SELECT 1/0"], env))
        self.assertEqual(bare.returncode, 1)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))
        [s] = steps_of(tx, "SQL")
        self.assertEqual(s["text"], "SELECT ?/?")
        self.assertEqual(s["attributes"]["sqlstate"], "22012")
        self.assertIn("22012", tx["error"])

    def test_failed_connection_is_a_failed_db_connect_step(self):
        closed = free_port()
        run = lambda env: subprocess.run([PSQL, "-X", "-h", "127.0.0.1", "-p", str(closed), "-U", "postgres",
                                          "-c", "select 1"], env=self.pg.client_env(env),
                                         capture_output=True, text=True, timeout=60)
        bare, traced, tx = self.traced_run(run)
        self.assertEqual(bare.returncode, 2)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))
        [conn] = steps_of(tx, "DB_CONNECT")
        self.assertIn("Connection refused", conn["error"])
        self.assertEqual(steps_of(tx, "SQL"), [])
        self.assertNotEqual(tx["error"], "")


# The default pgbench script (TPC-B like): the statement texts as each mode records them.
PGBENCH_SIMPLE = ["BEGIN;",
                  "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?;",
                  "SELECT abalance FROM pgbench_accounts WHERE aid = ?;",
                  "UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?;",
                  "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?;",
                  "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP);",
                  "END;"]
PGBENCH_PARAMS = ["BEGIN;",
                  "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;",
                  "SELECT abalance FROM pgbench_accounts WHERE aid = $1;",
                  "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2;",
                  "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;",
                  "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);",
                  "END;"]


class Pgbench(PgTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        subprocess.run([PGBENCH, "-i", "-q", *cls.pg.conn_args()[:-2], cls.pg.database],
                       env=cls.pg.client_env(bare_env()), check=True, capture_output=True, timeout=300)

    def pgbench(self, mode, env):
        # pgbench's -d is --debug: the database is its positional argument.
        return subprocess.run([PGBENCH, "-n", "-M", mode, "-t", "200", *self.pg.conn_args()[:-2], self.pg.database],
                              env=self.pg.client_env(env), capture_output=True, text=True, timeout=300)

    def check_mode(self, mode, texts):
        bare, traced, tx = self.traced_run(lambda env: self.pgbench(mode, env))
        self.assertEqual((bare.returncode, traced.returncode), (0, 0), traced.stderr)
        processed = int(re.search(r"actually processed: (\d+)/", traced.stdout).group(1))
        self.assertEqual(processed, 200)
        count, rows = executions(tx)
        # Every statement pgbench executed is there (as a row or in the summary), as often as pgbench says.
        self.assertEqual({t: count[t] for t in texts}, {t: processed for t in texts})
        self.assertEqual(rows[texts[2]], processed)  # the SELECT returns one row per transaction
        # The totals are exact: every SQL execution is counted once, rows past the limit in the summary.
        self.assertEqual(tx["sql_count"], sum(count.values()))
        self.assertLessEqual(len(tx["steps"]), 1000)
        self.assertTrue(tx.get("summary"), "2,800+ rows exceed the step limit: the rest is summarized")
        if mode == "prepared":
            prepares = [t for t in count if t.startswith("PREPARE ")]
            self.assertEqual(len(prepares), len(texts))
            self.assertEqual(sum(count[t] for t in prepares), len(texts))
        self.assertEqual(tx["error"], "")

    def test_init_copy_row_spans_the_data(self):
        run = lambda env: subprocess.run([PGBENCH, "-i", "-q", *self.pg.conn_args()[:-2], self.pg.database],
                                         env=self.pg.client_env(env), capture_output=True, text=True, timeout=300)
        bare, traced, tx = self.traced_run(run)
        self.assertEqual((bare.returncode, traced.returncode), (0, 0), traced.stderr)
        sql = steps_of(tx, "SQL")
        [copy] = [s for s in sql if s["text"].startswith("copy pgbench_accounts from stdin")]
        # The 100,000 account rows went out during the COPY row (pgbench -i streams them after PQexec).
        self.assertGreater(copy["bytes_written"], 1_000_000)
        # The row stayed open while they streamed (the bytes are its own, above), and it ended before the
        # next row began; how much of the next row's GAP it fills (~all) is wall time: printed.
        after = next(s for s in tx["steps"] if s["no"] == copy["no"] + 1)
        self.assertLessEqual(copy["start_offset_ns"] + copy["elapsed_ns"], after["start_offset_ns"])
        print(f"\nCOPY row: {copy['elapsed_ns'] / 1e6:.1f} ms of the next row's GAP of {after['gap_ns'] / 1e6:.1f} ms",
              flush=True)
        self.assertEqual(tx["error"], "")

    def test_simple(self):
        self.check_mode("simple", PGBENCH_SIMPLE)

    def test_extended(self):
        self.check_mode("extended", PGBENCH_PARAMS)

    def test_prepared(self):
        self.check_mode("prepared", PGBENCH_PARAMS)


class Batch(PgTestCase):
    def test_100k_statements_stay_bounded_with_exact_totals(self):
        n = 50_000
        path = os.path.join(self.tmp, "batch.sql")
        with open(path, "w") as f:
            f.write("CREATE TEMP TABLE kv(id int PRIMARY KEY, v text);\n")
            for i in range(n):
                f.write(f"INSERT INTO kv VALUES ({i}, 'value {i}');\nSELECT v FROM kv WHERE id = {i};\n")
        with Collector(self.tmp) as col:
            r = self.psql(["-q", "-o", "/dev/null", "-f", path], agent_env(col.endpoint, mode="process"))
            self.assertEqual(r.returncode, 0, r.stderr)
            wait_transactions(col.db, 1, timeout=60)
        [tx] = show_json(col.db, "--last", "1")
        check_sums(self, tx)
        self.assertLessEqual(len(tx["steps"]), 1000)
        count, rows = executions(tx)
        insert, select = "INSERT INTO kv VALUES (?, ?);", "SELECT v FROM kv WHERE id = ?;"
        self.assertEqual((count[insert], count[select]), (n, n))
        self.assertEqual(rows[select], n)
        self.assertEqual(tx["sql_count"], 2 * n + 1)
        self.assertEqual(sum(count.values()), 2 * n + 1)
        summary = [s for s in tx["summary"] if s["kind"] == "SQL"]
        self.assertEqual(len(summary), 2)  # one line per statement shape, whatever the count
        # SQL time: the rows' and the summary's elapsed add up to the header's exactly (the recorder
        # measures a row's elapsed once, at close, and that one number goes to the row or its summary
        # line and to the transaction's total). Fetch time is not part of sql_ns.
        summed = sum(s["elapsed_ns"] for s in steps_of(tx, "SQL")) + sum(s["elapsed_ns"] for s in summary)
        self.assertEqual(tx["sql_ns"], summed)


if __name__ == "__main__":
    unittest.main()
