"""SQL steps from SQLite, with real clients: the sqlite3 shell (process mode) and a Python http.server +
sqlite3 web app (samples/py_sqlite_app, http mode; Python dlopens _sqlite3, PITFALLS 1)."""
import json
import os
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from txraytest import (PYTHON, SOURCE_DIR, Collector, TxrayTestCase, agent_env, bare_env, check_sums,  # noqa: E402
                       free_port, show_json, wait_port, wait_transactions)

SQLITE3 = "/usr/bin/sqlite3"
APP = os.path.join(SOURCE_DIR, "samples", "py_sqlite_app", "app.py")


def sql_steps(tx):
    return [s for s in tx["steps"] if s["kind"] == "SQL"]


def check_sql_totals(test, tx):
    """The header's SQL and fetch times and count are the sums over the SQL steps (none folded here)."""
    steps = sql_steps(tx)
    test.assertEqual(tx["sql_count"], len(steps), tx["name"])
    test.assertEqual(tx["sql_ns"], sum(s["elapsed_ns"] for s in steps), tx["name"])
    test.assertEqual(tx["fetch_ns"], sum(s.get("fetch_ns") or 0 for s in steps), tx["name"])


# The script and, per statement, the masked text and rows expected on its SQL step.
SCRIPT = [
    ("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL);",
     "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL);", 0),
    ("INSERT INTO users VALUES (1, 'ann', 1.5), (2, 'bob', -2.25), (3, 'cy''s', 3e2);",
     "INSERT INTO users VALUES (?, ?, ?), ...;", 0),
    ("INSERT INTO users(name, score) SELECT name || '-copy', score * 2 FROM users;",
     "INSERT INTO users(name, score) SELECT name || ?, score * ? FROM users;", 0),
    ("SELECT id, name FROM users ORDER BY id;", "SELECT id, name FROM users ORDER BY id;", 6),
    ("SELECT name FROM users WHERE id IN (1, 3, 5, 99);", "SELECT name FROM users WHERE id IN (?+);", 3),
    ("UPDATE users SET score = score + 1 WHERE id > 2;", "UPDATE users SET score = score + ? WHERE id > ?;", 0),
    ("DELETE FROM users WHERE name LIKE '%copy' AND id = 6;", "DELETE FROM users WHERE name LIKE ? AND id = ?;", 0),
    ("SELECT count(*) FROM users;", "SELECT count(*) FROM users;", 1),
    ("SELECT * FROM users WHERE score > 1000000;", "SELECT * FROM users WHERE score > ?;", 0),
]
CHANGES = {1: 3, 2: 3, 5: 4, 6: 1}  # statement index -> rows it changed


class SqliteShell(TxrayTestCase):
    def run_shell(self, script, env, db_name):
        return subprocess.run([SQLITE3, os.path.join(self.tmp, db_name)], input=script, env=env,
                              capture_output=True, text=True, timeout=60)

    def test_script_gives_one_step_per_statement(self):
        script = "\n".join(s for s, _, _ in SCRIPT) + "\n"
        bare = self.run_shell(script, bare_env(), "bare.db")
        with Collector(self.tmp) as col:
            traced = self.run_shell(script, agent_env(col.endpoint, mode="process"), "traced.db")
            wait_transactions(col.db, 1)
        # The program behaves the same under the agent.
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))

        [tx] = show_json(col.db, "--last", "10")
        check_sums(self, tx)
        check_sql_totals(self, tx)
        steps = sql_steps(tx)
        # N statements -> N SQL steps: nothing libsqlite3 ran on its own (schema reads) is a step.
        self.assertEqual([s["text"] for s in steps], [m for _, m, _ in SCRIPT])
        self.assertEqual([s["rows"] for s in steps], [r for _, _, r in SCRIPT])
        for i, n in CHANGES.items():
            self.assertEqual(steps[i].get("changes"), n, steps[i]["text"])
        for s in steps:
            self.assertEqual(s["error"], "")
            self.assertEqual(s["parent"], -1)
            self.assertNotIn("sqlite_master", s["text"])
            self.assertNotIn("sqlite_schema", s["text"])
            self.assertRegex(s["fingerprint"], "^[0-9a-f]{16}$")
        self.assertEqual(len({s["fingerprint"] for s in steps}), len(steps))
        self.assertEqual(tx["error"], "")

    def test_open_is_a_db_connect_row_and_the_first_prepare_reads_the_schema(self):
        """sqlite3_open_v2 is a DB_CONNECT row; SQLite reads the schema in the connection's first prepare,
        which is a second DB_CONNECT row ("(schema)"), before the first SQL row."""
        db = os.path.join(self.tmp, "c.db")
        subprocess.run([SQLITE3, db, "CREATE TABLE t(x); INSERT INTO t VALUES (7);"], env=bare_env(), check=True)
        with Collector(self.tmp) as col:
            r = subprocess.run([SQLITE3, db, "SELECT x FROM t;"], env=agent_env(col.endpoint, mode="process"),
                               capture_output=True, text=True, timeout=60)
            wait_transactions(col.db, 1)
        self.assertEqual((r.returncode, r.stdout), (0, "7\n"), r.stderr)
        [tx] = show_json(col.db, "--last", "10")
        check_sums(self, tx)
        kinds = [(s["kind"], s["text"]) for s in tx["steps"] if s["kind"] in ("DB_CONNECT", "SQL")]
        self.assertEqual(kinds[:3], [("DB_CONNECT", f"sqlite:{db}"), ("DB_CONNECT", f"sqlite:{db} (schema)"),
                                     ("SQL", "SELECT x FROM t;")])
        for s in tx["steps"]:
            if s["kind"] == "DB_CONNECT":
                self.assertEqual(s["error"], "")
                self.assertGreater(s["elapsed_ns"], 0)

    def test_failing_statement_is_a_failed_step_and_fails_the_transaction(self):
        script = ("CREATE TABLE t(id INTEGER PRIMARY KEY);\nINSERT INTO t VALUES (1);\n"
                  "INSERT INTO t VALUES (1);\nSELECT * FROM missing_table;\nSELECT count(*) FROM t;\n")
        bare = self.run_shell(script, bare_env(), "bare.db")
        with Collector(self.tmp) as col:
            traced = self.run_shell(script, agent_env(col.endpoint, mode="process"), "traced.db")
            wait_transactions(col.db, 1)
        self.assertNotEqual(bare.returncode, 0)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr), (bare.returncode, bare.stdout, bare.stderr))
        [tx] = show_json(col.db, "--last", "10")
        check_sql_totals(self, tx)
        steps = sql_steps(tx)
        self.assertEqual(len(steps), 5)
        # A constraint violation at step time, and a compile error at prepare time.
        self.assertIn("UNIQUE constraint failed", steps[2]["error"])
        self.assertEqual(steps[2]["status"], 19)  # SQLITE_CONSTRAINT
        self.assertIn("no such table: missing_table", steps[3]["error"])
        self.assertEqual(steps[3]["text"], "SELECT * FROM missing_table;")
        self.assertEqual(steps[4]["error"], "")
        self.assertEqual(steps[4]["rows"], 1)
        self.assertIn("UNIQUE constraint failed", tx["error"])

    def test_past_the_step_limit_statements_are_summarized_with_all_their_rows(self):
        script = "CREATE TABLE t(a);\nINSERT INTO t VALUES (1), (2), (3);\n"
        script += "".join(f"SELECT a FROM t WHERE a > {-i};\n" for i in range(200))
        with Collector(self.tmp) as col:
            r = self.run_shell(script, agent_env(col.endpoint, mode="process", extra={"TXRAY_MAX_STEPS": "20"}), "t.db")
            self.assertEqual(r.returncode, 0, r.stderr)
            wait_transactions(col.db, 1)
        [tx] = show_json(col.db, "--last", "1")
        check_sums(self, tx)
        self.assertLessEqual(len(tx["steps"]), 20)
        select = "SELECT a FROM t WHERE a > ?;"
        rows = [s for s in sql_steps(tx) if s["text"] == select]
        [summary] = [s for s in tx["summary"] if s["kind"] == "SQL"]
        self.assertEqual(summary["text"], select)
        self.assertEqual(len(rows) + summary["count"], 200)
        # Each execution returned 3 rows, fetched after its row was closed (and folded): all are counted.
        self.assertEqual(sum(s["rows"] for s in rows) + summary["rows"], 600)
        self.assertEqual(tx["sql_count"], 202)
        # SQL time is exact past the limit too: rows' plus summary lines' elapsed (one measurement each,
        # at close). Fetch time of folded executions has no summary field: the total holds at least the
        # rows' fetch time.
        steps = sql_steps(tx)
        self.assertEqual(tx["sql_count"], len(steps) + summary["count"])
        self.assertEqual(tx["sql_ns"], sum(s["elapsed_ns"] for s in steps) + summary["elapsed_ns"])
        self.assertGreaterEqual(tx["fetch_ns"], sum(s.get("fetch_ns") or 0 for s in steps))


# A process-mode program whose threads run statements (and HTTP calls) at the same time: every one of
# them is in the one transaction's totals, past the step limit too, whatever the interleaving.
THREADS_SCRIPT = r"""
import sqlite3, sys, threading, urllib.request
db, n_threads, per, url = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
start = threading.Barrier(n_threads)
def work(k):
    c = sqlite3.connect(db, timeout=60, check_same_thread=False)
    start.wait()
    for i in range(per):
        c.execute("SELECT v FROM t WHERE id = ?", (k * per + i,)).fetchall()
        if url != "-" and i % 8 == 0:
            urllib.request.urlopen(url, timeout=30).read()
    c.close()
ts = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
for t in ts: t.start()
for t in ts: t.join()
"""


class ProcessModeThreads(TxrayTestCase):
    """8 threads of one process-mode program (python3 + sqlite3) overlap their statements: sql_count is
    exact (it was 1,311 of 1,600: one thread's close closed another's statement still running, which was
    then folded away before its own close counted it), and so are the SQL time and the summary lines."""

    THREADS, PER = 8, 200

    def run_threads(self, url="-"):
        import sqlite3
        db = os.path.join(self.tmp, "threads.db")
        con = sqlite3.connect(db)  # made here, not under the agent: the program runs only the SELECTs
        con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(self.THREADS * self.PER)])
        con.commit()
        con.close()
        with Collector(self.tmp) as col:
            r = subprocess.run([PYTHON, "-c", THREADS_SCRIPT, db, str(self.THREADS), str(self.PER), url],
                               env=agent_env(col.endpoint, mode="process"), capture_output=True, text=True,
                               timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            wait_transactions(col.db, 1)
        [tx] = show_json(col.db, "--last", "10")
        check_sums(self, tx)
        return tx

    def check_sql(self, tx):
        n = self.THREADS * self.PER
        steps = sql_steps(tx)
        summary = [m for m in tx["summary"] if m["kind"] == "SQL"]
        self.assertEqual(tx["sql_count"], n)
        self.assertEqual(len(steps) + sum(m["count"] for m in summary), n)
        self.assertTrue(summary, "past the step limit (1000 rows by default): some statements are folded")
        self.assertEqual(tx["sql_ns"], sum(s["elapsed_ns"] for s in steps) + sum(m["elapsed_ns"] for m in summary))
        self.assertEqual(sum(s["rows"] for s in steps) + sum(m["rows"] or 0 for m in summary), n)
        for s in steps:
            self.assertEqual(s["parent"], -1, "a statement is inside nothing of another thread's")

    def test_threads_statements_are_all_counted(self):
        self.check_sql(self.run_threads())

    def test_threads_calls_are_all_counted(self):
        port = free_port()
        self.spawn([PYTHON, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", self.tmp],
                   env=bare_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port)
        tx = self.run_threads(f"http://127.0.0.1:{port}/")
        self.check_sql(tx)
        calls = [s for s in tx["steps"] if s["kind"] == "HTTP_CALL"]
        call_summary = [m for m in tx["summary"] if m["kind"] == "HTTP_CALL"]
        n_calls = self.THREADS * len(range(0, self.PER, 8))
        self.assertEqual(tx["call_count"], n_calls)
        self.assertEqual(len(calls) + sum(m["count"] for m in call_summary), n_calls)
        self.assertEqual(tx["call_ns"], sum(s["elapsed_ns"] for s in calls) + sum(m["elapsed_ns"] for m in call_summary))


class PySqliteApp(TxrayTestCase):
    """samples/py_sqlite_app under the agent: each request's profile lists its queries."""

    def start_app(self, env):
        port = free_port()
        p = self.spawn([PYTHON, APP, "--port", str(port), "--db", os.path.join(self.tmp, f"shop-{port}.db")],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_port(port)
        return p, port

    REQUESTS = [("GET", "/items?limit=7"), ("GET", "/item/5"), ("GET", "/item/9999"), ("GET", "/search?q=item-00"),
                ("GET", "/report"), ("POST", "/orders?item=3&qty=2"), ("GET", "/fail")]

    def call_all(self, port):
        out = []
        for method, path in self.REQUESTS:
            req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=b"" if method == "POST" else None)
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    out.append((r.status, r.read()))
            except urllib.error.HTTPError as e:
                out.append((e.code, e.read()))
        return out

    def stop(self, p):
        p.terminate()
        p.wait(timeout=10)

    def test_requests_list_their_queries(self):
        bare, bare_port = self.start_app(bare_env())
        bare_answers = self.call_all(bare_port)
        self.stop(bare)
        with Collector(self.tmp) as col:
            app, port = self.start_app(agent_env(col.endpoint, app="shop"))
            answers = self.call_all(port)
            wait_transactions(col.db, len(self.REQUESTS))
            self.stop(app)
        self.assertEqual(answers, bare_answers)  # same responses with and without the agent

        txs = show_json(col.db, "--last", "100")
        by_name = {}
        for tx in txs:
            by_name.setdefault(tx["name"], []).append(tx)
            check_sums(self, tx)
            check_sql_totals(self, tx)

        def one(name, status):
            [tx] = [t for t in by_name[name] if t["status"] == status]
            return tx, sql_steps(tx)

        tx, steps = one("GET /items", 200)
        self.assertEqual([(s["text"], s["rows"]) for s in steps],
                         [("SELECT id, name, price FROM items ORDER BY id LIMIT ?", 7)])
        self.assertEqual(steps[0]["attributes"]["binds"], "int")
        self.assertGreater(steps[0]["elapsed_ns"], 0)
        self.assertGreater(steps[0]["fetch_ns"], 0)  # rows 2..7 were fetched after the first

        items = by_name["GET /item/5"] + by_name["GET /item/9999"]
        self.assertEqual(sorted((t["status"], [s["rows"] for s in sql_steps(t)]) for t in items),
                         [(200, [1]), (404, [0])])
        for t in items:
            self.assertEqual([s["text"] for s in sql_steps(t)],
                             ["SELECT id, name, category, price, stock FROM items WHERE id = ?"])

        tx, steps = one("GET /search", 200)
        self.assertEqual([(s["text"], s["rows"]) for s in steps],
                         [("SELECT id, name FROM items WHERE name LIKE ? ORDER BY id", 99)])
        self.assertEqual(steps[0]["attributes"]["binds"], "text")

        tx, steps = one("GET /report", 200)
        self.assertEqual([(s["text"], s["rows"]) for s in steps],
                         [("SELECT count(*) FROM items", 1),
                          ("SELECT category, sum(price) FROM items GROUP BY category ORDER BY category", 5)])

        tx, steps = one("POST /orders", 201)
        self.assertEqual([s["text"] for s in steps],
                         ["BEGIN", "INSERT INTO orders(item_id, qty) VALUES (?, ?)",
                          "UPDATE items SET stock = stock - ? WHERE id = ?", "COMMIT"])
        self.assertEqual([s.get("changes") for s in steps[1:3]], [1, 1])
        self.assertEqual(steps[1]["attributes"]["binds"], "int, int")

        tx, steps = one("GET /fail", 500)
        self.assertEqual(len(steps), 1)
        self.assertEqual(steps[0]["text"], "SELECT * FROM no_such_table WHERE id = ?")
        self.assertIn("no such table", steps[0]["error"])
        self.assertIn("no such table", tx["error"])


if __name__ == "__main__":
    unittest.main()
