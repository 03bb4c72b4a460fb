"""SQL rows from MySQL/MariaDB drivers that speak the protocol themselves (agent/protocols/mysql), against a
real MariaDB server (mariadbserver.py), each front under `txray run` answering many concurrent requests
with a unique id per request (tests/e2e/wire_mysql/):
- PyMySQL in a threaded http.server (text queries, the value interpolated client-side);
- Node's mysql2 in an http server with a pool (pool.query and pool.execute: a prepared statement), and
  its promise API (pool.query, pool.execute, getConnection + release) beside one connection that every
  request shares (commands queued behind each other, written from the previous reply's callback);
- MariaDB Connector/J in a JDK HttpServer with 8 worker threads (client-side and server-side prepares);
- PHP's PDO over mysqlnd, in process mode: one php process per request (emulated and native prepares).
With TXRAY_SQL=raw the row carries the request's own id (in the text, or in attribute binds), which proves
the row is in the right transaction: >= 99% of requests hold exactly their own row with its rows, and no
transaction holds another request's row. With the default mask the same rows carry no value. A missing
table's row shows SQLSTATE 42S02."""
import collections
import os
import shutil
import signal
import subprocess
import time
import unittest

from mariadbserver import MariaDbServer, available
from txraytest import (AGENT, PYTHON, SOURCE_DIR, TXRAY, Collector, TxrayTestCase, bare_env, free_port, show_json,
                       wait_for, wait_port, count_transactions, get_all)

HERE = os.path.join(SOURCE_DIR, "tests", "e2e", "wire_mysql")
NODE_MODULES = os.path.join(SOURCE_DIR, "tests", "e2e", "drivers", "node_modules")
CONNECTOR_J = "/usr/share/java/mariadb-java-client.jar"
REQUESTS = 96  # per kind of statement
CLIENTS = 8
PEOPLE = 1000


def have_pymysql():
    return subprocess.run([PYTHON, "-c", "import pymysql"], capture_output=True).returncode == 0


def count_app(db, app):
    return count_transactions(db, app)


def drive(port, paths):
    """GET every path, CLIENTS keep-alive connections at once; ({path: body}, [errors])."""
    out, errors = get_all(port, paths, CLIENTS)
    return {p: body for p, (_, body) in out.items()}, errors


@unittest.skipUnless(available() and os.path.exists(AGENT), "needs mariadb-server and the agent")
class WireMysql(TxrayTestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        cls.server = MariaDbServer().start()
        values = ",".join(f"({i},'p{i}')" for i in range(1, PEOPLE + 1))
        cls.server.sql(f"CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(32)); INSERT INTO people VALUES {values}")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def ids(self, kinds):
        """A unique id per request, spread over the kinds."""
        return [(k, 1 + j * len(kinds) + n) for j in range(REQUESTS) for n, k in enumerate(kinds)]

    def run_front(self, app, cmd, kinds, extra=None):
        """The front under `txray run`, driven with every (kind, id); its transactions by path."""
        port = free_port()
        env = bare_env(extra)
        env.pop("NODE_OPTIONS", None)
        reqs = self.ids(kinds)
        paths = [f"/{k}/{i}" for k, i in reqs]
        with Collector(self.tmp) as col:
            log = open(os.path.join(self.tmp, f"{app}.log"), "wb")
            p = self.spawn([TXRAY, "run", "--collector", col.endpoint, "--app", app, "--",
                            *[a.format(port=port, db=self.server.port) for a in cmd]], env=env, stdout=log,
                           stderr=subprocess.STDOUT)
            wait_port(port, 60)
            answers, errors = drive(port, paths)
            self.assertEqual(errors, [])
            for (k, i), path in zip(reqs, paths):
                want = f"{i} error 1146" if k == "bad" else f"{i} p{i}"
                self.assertEqual(answers.get(path), want, path)
            wait_for(lambda: count_app(col.db, app) >= len(paths), 60, what=f"{len(paths)} transactions of {app}")
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
            log.close()
            time.sleep(1.5)
            txs = show_json(col.db, "--app", app, "--last", str(10 * len(paths)))
        by_path = {t["name"].split(" ", 1)[1]: t for t in txs if t.get("kind") != "unattributed"}
        return reqs, by_path

    def check_rows(self, name, reqs, by_path, raw, texts, share=0.99):
        """Each request's SQL rows: its own statement (text in `texts` by kind), its own id (raw mode: in
        the text or the binds), one row returned; no other request's id anywhere. Returns the figures."""
        own, wrong, seen_binds, per_kind, missing = 0, [], collections.Counter(), collections.Counter(), []
        for k, i in reqs:
            t = by_path.get(f"/{k}/{i}")
            self.assertIsNotNone(t, f"{name}: no transaction for /{k}/{i}")
            # The statements of the handler (a driver's own set-up queries on a new connection are not).
            sql = [s for s in t["steps"] if s["kind"] == "SQL" and s["text"].startswith("SELECT name FROM")]
            mine = []
            for s in sql:
                shown = s["text"] + " " + s.get("attributes", {}).get("binds", "")
                seen_binds[s.get("attributes", {}).get("binds", "")] += 1
                if raw:
                    nums = {int(w) for w in shown.replace("'", " ").replace(",", " ").replace("=", " ").split()
                            if w.isdigit()}
                    if nums and i not in nums:
                        wrong.append((k, i, shown))
                    if i in nums:
                        mine.append(s)
                elif s["text"] == texts[k]:
                    mine.append(s)
            ok = len(mine) == 1 and mine[0]["text"] == texts[k] if not raw else len(mine) == 1
            if k == "bad":
                # The failing row: the query's, or (a driver that prepares first: mysql2) the PREPARE's,
                # which carries no value to tell whose it is.
                failed = [s for s in t["steps"] if s["kind"] == "SQL" and "missing_table" in s["text"] and s["error"]]
                ok = len(failed) == 1 and failed[0].get("attributes", {}).get("sqlstate") == "42S02" and \
                    failed[0]["error"].startswith("ERROR 1146 (42S02): ")
            elif ok:
                ok = mine[0].get("rows") == 1
            own += ok
            per_kind[k] += ok
            if not ok and len(missing) < 3:
                missing.append((k, i, [(x["kind"], x["text"][:60], x.get("rows"), x.get("attributes", {}).get("binds"))
                                       for x in t["steps"] if x["kind"] not in ("START", "END")]))
        self.assertEqual(wrong, [], f"{name}: rows of another request")
        kinds = ", ".join(f"{k} {n}/{REQUESTS}" for k, n in sorted(per_kind.items()))
        print(f"{name}: {own}/{len(reqs)} requests hold their own row ({kinds}); {len(seen_binds)} distinct binds",
              flush=True)
        self.assertGreaterEqual(own, share * len(reqs), f"{name}; some without their row: {missing}")
        return own

    # --- PyMySQL -------------------------------------------------------------------------------------

    @unittest.skipUnless(have_pymysql(), "python3-pymysql is not installed")
    def test_pymysql(self):
        texts = {"q": "SELECT name FROM people WHERE id = ?", "bad": "SELECT name FROM missing_table WHERE id = ?"}
        cmd = [PYTHON, os.path.join(HERE, "py_front.py"), "{port}", "{db}"]
        reqs, txs = self.run_front("py-wire", cmd, ["q", "bad"], {"TXRAY_SQL": "raw"})
        self.check_rows("pymysql raw", reqs, txs, True, texts)
        reqs, txs = self.run_front("py-wire-mask", cmd, ["q", "bad"])
        self.check_rows("pymysql mask", reqs, txs, False, texts)

    # --- mysql2 --------------------------------------------------------------------------------------

    @unittest.skipUnless(shutil.which("node") and os.path.isdir(os.path.join(NODE_MODULES, "mysql2")), "needs mysql2")
    def test_node_mysql2(self):
        texts = {"q": "SELECT name FROM people WHERE id = ?", "x": "SELECT name FROM people WHERE id = ?",
                 "bad": "SELECT name FROM missing_table WHERE id = ?"}
        cmd = [shutil.which("node"), os.path.join(HERE, "node_front.js"), "{port}", "{db}", NODE_MODULES]
        reqs, txs = self.run_front("node-wire", cmd, ["q", "x", "bad"], {"TXRAY_SQL": "raw"})
        self.check_rows("mysql2 raw", reqs, txs, True, texts)
        # pool.execute: a binary bind, masked to its kind by default (mysql2 sends a JavaScript number
        # as a DOUBLE).
        reqs, txs = self.run_front("node-wire-mask", cmd, ["x"])
        self.check_rows("mysql2 mask", reqs, txs, False, texts)
        binds = {s.get("attributes", {}).get("binds") for t in txs.values() for s in t["steps"]
                 if s["kind"] == "SQL" and not s["text"].startswith("PREPARE")}
        self.assertEqual(binds, {"real"})

    @unittest.skipUnless(shutil.which("node") and os.path.isdir(os.path.join(NODE_MODULES, "mysql2")), "needs mysql2")
    def test_node_mysql2_promise(self):
        """The promise API (pool.query, pool.execute, getConnection + release with fewer connections than
        clients), one connection shared by every request, whose commands all wait in its queue, and a query
        issued from another query's callback."""
        sql = "SELECT name FROM people WHERE id = ?"
        texts = {k: sql for k in ("pq", "px", "pc", "one", "chain")}
        cmd = [shutil.which("node"), os.path.join(HERE, "node_promise_front.js"), "{port}", "{db}", NODE_MODULES]
        reqs, txs = self.run_front("node-wire-promise", cmd, list(texts), {"TXRAY_SQL": "raw"})
        self.check_rows("mysql2 promise raw", reqs, txs, True, texts)

    # --- Connector/J ---------------------------------------------------------------------------------

    @unittest.skipUnless(shutil.which("javac") and os.path.exists(CONNECTOR_J), "needs javac and libmariadb-java")
    def test_connector_j(self):
        classes = os.path.join(self.tmp, "classes")
        subprocess.run([shutil.which("javac"), "-d", classes, "-cp", CONNECTOR_J, os.path.join(HERE, "JdbcFront.java")],
                       check=True, timeout=180)
        texts = {"q": "SELECT name FROM people WHERE id = ?", "x": "SELECT name FROM people WHERE id = ?",
                 "bad": "SELECT name FROM missing_table WHERE id = ?"}
        cmd = [shutil.which("java"), "-cp", f"{classes}:{CONNECTOR_J}", "JdbcFront", "{port}", "{db}"]
        reqs, txs = self.run_front("jdbc-wire", cmd, ["q", "x", "bad"], {"TXRAY_SQL": "raw"})
        self.check_rows("connector/j raw", reqs, txs, True, texts)
        reqs, txs = self.run_front("jdbc-wire-mask", cmd, ["x"])
        self.check_rows("connector/j mask", reqs, txs, False, texts)

    # --- PHP PDO (mysqlnd), process mode -------------------------------------------------------------

    @unittest.skipUnless(shutil.which("php"), "needs php")
    def test_php_pdo(self):
        texts = {"1": "SELECT name FROM people WHERE id = ?", "0": "SELECT name FROM people WHERE id = ?"}
        with Collector(self.tmp) as col:
            env = bare_env({"TXRAY_SQL": "raw"})
            jobs = [(emulate, 1 + 2 * j + int(emulate)) for j in range(REQUESTS // 4) for emulate in ("1", "0")]
            procs = []
            for k in range(0, len(jobs), CLIENTS):  # CLIENTS php processes at once
                batch = [(e, i, subprocess.Popen(
                    [TXRAY, "run", "--collector", col.endpoint, "--app", "php-wire", "--mode", "process", "--",
                     shutil.which("php"), os.path.join(HERE, "pdo_one.php"), str(self.server.port), str(i), e,
                     "people"], env=env, stdout=subprocess.PIPE, text=True)) for e, i in jobs[k:k + CLIENTS]]
                for e, i, p in batch:
                    out, _ = p.communicate(timeout=60)
                    self.assertEqual(out.strip(), f"{i} p{i}")
                procs += batch
            bad = subprocess.run([TXRAY, "run", "--collector", col.endpoint, "--app", "php-bad", "--mode", "process",
                                  "--", shutil.which("php"), os.path.join(HERE, "pdo_one.php"), str(self.server.port),
                                  "7", "0", "missing_table"], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(bad.stdout.strip(), "7 error 1146")
            wait_for(lambda: count_app(col.db, "php-wire") >= len(jobs), 60, what="php transactions")
            wait_for(lambda: count_app(col.db, "php-bad") >= 1, 60, what="the failing php run")
            txs = show_json(col.db, "--app", "php-wire", "--last", str(10 * len(jobs)))
            [badtx] = [t for t in show_json(col.db, "--app", "php-bad", "--last", "5") if t.get("kind") != "unattributed"]
        # One transaction per process: find each by the id its row carries.
        own = 0
        found = collections.Counter()
        for t in txs:
            for s in t["steps"]:
                if s["kind"] == "SQL" and s["text"].startswith("SELECT name FROM") and s.get("rows") == 1:
                    shown = (s["text"] + " " + s.get("attributes", {}).get("binds", "")).replace("'", "")
                    found[shown] += 1
        for e, i in jobs:
            shown = f"SELECT name FROM people WHERE id = {i} " if e == "1" else f"SELECT name FROM people WHERE id = ? {i}"
            own += found[shown] == 1
        print(f"php pdo: {own}/{len(jobs)} processes hold their own row", flush=True)
        self.assertGreaterEqual(own, 0.99 * len(jobs), sorted(found)[:5])
        sql = [s for s in badtx["steps"] if s["kind"] == "SQL" and s["error"]]
        self.assertEqual([s["attributes"]["sqlstate"] for s in sql], ["42S02"], badtx["steps"])


if __name__ == "__main__":
    unittest.main()
