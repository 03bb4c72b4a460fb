"""Stacks of failed and slow steps (docs/stacks.md): real programs under the agent, the stack read back
through `txray show --json` and `txray show`.

- a failing statement of Python's sqlite3 module: the stack shows the interpreter's frames;
- a failing query of psql (libpq) against a real PostgreSQL server;
- the C++ two_service front's outbound call failing (the back-end answers 503; nothing listens) and a slow
  one: its frames name the calling function, call_backend; a quick successful call has no stack;
- TXRAY_STACKS=0 takes none.
"""
import json
import os
import subprocess
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pgserver import PSQL, PgServer, available as pg_available  # noqa: E402
from txraytest import (BIN, PYTHON, TXRAY, Collector, TxrayTestCase, agent_env, check_sums, free_port,  # noqa: E402
                       show_json, show_text, wait_port, wait_transactions)

FRONT = os.path.join(BIN, "two_service_front")

SQLITE_SCRIPT = textwrap.dedent("""
    import sqlite3
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t(x)")
    try:
        con.execute("SELECT * FROM no_such_table")
    except sqlite3.OperationalError:
        pass
    con.execute("SELECT count(*) FROM t").fetchall()
""")

# A back-end for the C++ front: /price/fail-* answers 503, /price/slow-* answers after 250 ms, the rest at once.
BACKEND = textwrap.dedent("""
    import http.server, sys, time
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            if "slow" in self.path:
                time.sleep(0.25)
            code = 503 if "fail" in self.path else 200
            body = b"{}"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def stacked(tx, kind=None):
    return [s for s in tx["steps"] if s.get("stack") and (kind is None or s["kind"] == kind)]


def frames_text(step):
    return "\n".join(f"{f['function']} ({f['module']}+{f['offset']:#x})" for f in step["stack"])


class Stacks(TxrayTestCase):
    def run_process(self, args, extra=None, **kw):
        with Collector(self.tmp) as col:
            r = subprocess.run(args, env=agent_env(col.endpoint, mode="process", extra=extra),
                               capture_output=True, text=True, timeout=60, **kw)
            wait_transactions(col.db, 1)
        [tx] = show_json(col.db, "--last", "1")
        check_sums(self, tx)
        return r, tx, col.db

    def test_python_sqlite_failing_statement(self):
        script = os.path.join(self.tmp, "fail.py")
        with open(script, "w") as f:
            f.write(SQLITE_SCRIPT)
        r, tx, db = self.run_process([PYTHON, script])
        self.assertEqual(r.returncode, 0, r.stderr)
        sql = [s for s in tx["steps"] if s["kind"] == "SQL"]
        failed = [s for s in sql if s["error"]]
        self.assertEqual(len(failed), 1, sql)
        self.assertIn("stack", failed[0])
        frames = failed[0]["stack"]
        # What a Python stack shows today: the C frames, the interpreter's among them.
        self.assertIn("_PyEval_EvalFrameDefault", [f["function"] for f in frames], frames_text(failed[0]))
        self.assertTrue(any(f["module"].startswith("python3") for f in frames), frames_text(failed[0]))
        # Frame 0 is the caller of sqlite3 (the agent's hook and recorder frames are dropped; in process mode
        # the agent's main() wrapper stays, near the bottom, where it really is).
        self.assertTrue(frames[0]["module"].startswith("_sqlite3"), frames_text(failed[0]))
        # Quick statements that succeeded have none.
        self.assertTrue(all("stack" not in s for s in sql if not s["error"]), sql)
        # `txray show` prints it under the row.
        text = show_text(db, "--last", "1")
        lines = text.splitlines()
        at = next(i for i, line in enumerate(lines) if "] SQL SELECT * FROM no_such_table" in line)
        self.assertIn(" at ", lines[at + 1])
        self.assertIn("_PyEval_EvalFrameDefault (python3", text)

    def test_stacks_off(self):
        script = os.path.join(self.tmp, "fail.py")
        with open(script, "w") as f:
            f.write(SQLITE_SCRIPT)
        r, tx, _ = self.run_process([PYTHON, script], extra={"TXRAY_STACKS": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(any(s["error"] for s in tx["steps"]))
        self.assertEqual(stacked(tx), [])

    @unittest.skipUnless(pg_available(), "PostgreSQL 15 not installed")
    def test_libpq_failing_query(self):
        with PgServer() as pg:
            r, tx, _ = self.run_process([PSQL, "-X", *pg.conn_args(), "-c", "SELECT 1", "-c", "SELECT * FROM no_such_table"],
                                        extra=pg.client_env({}))
        self.assertNotEqual(r.returncode, 0)  # psql reports the failed statement
        failed = [s for s in tx["steps"] if s["kind"] == "SQL" and s["error"]]
        self.assertEqual(len(failed), 1, tx["steps"])
        self.assertIn("stack", failed[0])
        frames = failed[0]["stack"]
        # psql is stripped: its own frames are module+offset, libc's are named.
        self.assertEqual(frames[0]["module"], "psql", frames_text(failed[0]))
        self.assertIn("__libc_start_main", [f["function"] for f in frames], frames_text(failed[0]))
        self.assertEqual([s for s in stacked(tx, "SQL") if not s["error"]], [])

    def test_cpp_failing_and_slow_calls_name_the_caller(self):
        backend_port = free_port()
        self.spawn([PYTHON, "-c", BACKEND, str(backend_port)])
        wait_port(backend_port)
        front_port = free_port()
        with Collector(self.tmp) as col:
            self.spawn([FRONT, "--port", str(front_port), "--backend", str(backend_port)],
                       env=agent_env(col.endpoint, app="front"), stdout=subprocess.DEVNULL)
            wait_port(front_port)
            for oid in ("1", "fail-2", "slow-3"):
                out = subprocess.run(["curl", "-s", f"http://127.0.0.1:{front_port}/order/{oid}"],
                                     capture_output=True, text=True, timeout=30).stdout
                self.assertIn(f"order {oid}", out)
            wait_transactions(col.db, 3)
            txs = {t["name"]: t for t in show_json(col.db, "--last", "3")}
        calls = {name: [s for s in t["steps"] if s["kind"] == "HTTP_CALL"] for name, t in txs.items()}
        [ok] = calls["GET /order/1"]
        [failed] = calls["GET /order/fail-2"]
        [slow] = calls["GET /order/slow-3"]
        self.assertNotIn("stack", ok)
        self.assertEqual(failed["status"], 503)
        for step in (failed, slow):
            self.assertIn("stack", step)
            names = [f["function"] for f in step["stack"]]
            self.assertTrue(any(n.startswith("(anonymous namespace)::call_backend(") for n in names), frames_text(step))
            self.assertTrue(any(f["module"] == "two_service_front" for f in step["stack"]))
        # The report's slowest-transactions table: the slow call is the responsible step, with its top frames.
        rep = json.loads(subprocess.run([TXRAY, "report", "--db", col.db, "--format", "json"], check=True,
                                        capture_output=True, text=True).stdout)
        top = rep["slowest"][0]
        self.assertEqual(top["name"], "GET /order/slow-3")
        self.assertIn("HTTP_CALL", top["step"])
        self.assertEqual(len(top["step_stack"]), 3, top)
        self.assertEqual(top["step_stack"][0], frames_text(slow).splitlines()[0])
        md = subprocess.run([TXRAY, "report", "--db", col.db, "--format", "md"], check=True,
                            capture_output=True, text=True).stdout
        self.assertIn("\u00b7 at " + top["step_stack"][0], md)

    def test_cpp_failed_connect_names_the_caller(self):
        closed = free_port()  # nothing listens there
        front_port = free_port()
        with Collector(self.tmp) as col:
            self.spawn([FRONT, "--port", str(front_port), "--backend", str(closed)],
                       env=agent_env(col.endpoint, app="front"), stdout=subprocess.DEVNULL)
            wait_port(front_port)
            out = subprocess.run(["curl", "-s", f"http://127.0.0.1:{front_port}/order/4"],
                                 capture_output=True, text=True, timeout=30).stdout
            self.assertIn("back-end failed", out)
            wait_transactions(col.db, 1)
            [tx] = show_json(col.db, "--last", "1")
        failed = [s for s in tx["steps"] if s["kind"] == "SOCKET" and s["error"]]
        self.assertTrue(failed, tx["steps"])
        for step in failed:
            self.assertIn("stack", step)
            self.assertIn("call_backend", frames_text(step))


if __name__ == "__main__":
    unittest.main()
