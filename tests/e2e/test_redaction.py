"""Secrets never leave the host (docs/security.md, "What is recorded"): a distinct secret planted in every
place a value can be recorded — inbound and outbound query strings, a path token, URL userinfo, a SQL
literal and a SQL bind, a cookie, an Authorization header — through real programs under the agent (a
threaded Python service with sqlite3 and urllib, a traced Python back-end, curl), then searched for in the
store's files, `txray show` (text and --json), every `txray report` format and the spans of an OTLP
export: found 0 times by default. With TXRAY_VALUES=raw the agent keeps the values it masks by default,
and every profile it affects says so (VALUES: raw); headers are never kept, raw or not."""
import glob
import http.client
import json
import os
import re
import subprocess
import textwrap
import unittest

from otlptest import Receiver, receiver_installed
from txraytest import (PYTHON, TXRAY, Collector, TxrayTestCase, agent_env, free_port, show_json, show_text,
                       wait_port, wait_transactions)

BACKEND = textwrap.dedent("""
    import http.server, sys
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")

FRONT = textwrap.dedent("""
    import http.server, sqlite3, sys, urllib.request
    backend = int(sys.argv[2])
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE TABLE users (name TEXT, pw TEXT)")
    db.execute("INSERT INTO users VALUES ('bob', 'x')")
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            if self.path.startswith("/login"):
                db.execute("SELECT name FROM users WHERE pw = 'SQLLITERAL55'").fetchall()
                db.execute("SELECT name FROM users WHERE pw = ?", ("SQLBIND66",)).fetchall()
                req = urllib.request.Request(f"http://127.0.0.1:{backend}/x?api_key=SUPERKEY123&user=bob",
                                             headers={"Authorization": "Bearer BEARERTOKEN88"})
                urllib.request.urlopen(req, timeout=10).read()
            body = b"done"
            self.send_response(200)
            self.send_header("Set-Cookie", "sid=SETCOOKIE44")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")

# Each secret, and where it was planted.
SECRETS = {
    "PASSWORD777": "inbound query (password=)",
    "NEXTPAGE31": "inbound query (next=, not a credential's name)",
    "SUPERKEY123": "outbound query (api_key=), and the back-end's inbound query",
    "BOBSNAME29": "outbound query (user=, not a credential's name)",
    "PATHTOKEN42": "path segment under TXRAY_MASK_PATH=/reset/*",
    "USERINFOPW99": "URL userinfo password (curl)",
    "CURLTOKEN11": "curl's URL query",
    "SQLLITERAL55": "SQL literal",
    "SQLBIND66": "SQL bind value",
    "COOKIESECRET": "Cookie request header",
    "SETCOOKIE44": "Set-Cookie response header",
    "BEARERTOKEN88": "Authorization header",
    "CURLBEARER12": "Authorization header (curl)",
}


def get(port, path, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


class Redaction(TxrayTestCase):
    def run_services(self, extra_env, otlp=None):
        """Drives the two services and curl under the agent; returns the collector and the texts that
        every reader made of the store (name -> text)."""
        extra_args = ["--otlp-endpoint", otlp.endpoint] if otlp else []
        col = Collector(self.tmp, extra_args=extra_args).start()
        back, front = free_port(), free_port()
        for name, src in (("backend.py", BACKEND), ("front.py", FRONT)):
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(src)
        env = {"TXRAY_MASK_PATH": "/reset/*", "TXRAY_STACKS": "0", **extra_env}
        self.spawn([PYTHON, os.path.join(self.tmp, "backend.py"), str(back)],
                   env=agent_env(col.endpoint, app="back", extra=env))
        self.spawn([PYTHON, os.path.join(self.tmp, "front.py"), str(front), str(back)],
                   env=agent_env(col.endpoint, app="front", extra=env))
        wait_port(back)
        wait_port(front)
        self.assertEqual(get(front, "/login?password=PASSWORD777&next=NEXTPAGE31&page=2",
                             {"Cookie": "session=COOKIESECRET"}), (200, b"done"))
        self.assertEqual(get(front, "/reset/PATHTOKEN42"), (200, b"done"))
        r = subprocess.run(["curl", "-s", "-H", "Authorization: Bearer CURLBEARER12",
                            f"http://bob:USERINFOPW99@127.0.0.1:{back}/y?token=CURLTOKEN11&user=BOBSNAME29"],
                           env=agent_env(col.endpoint, app="curl", mode="process", extra=env),
                           capture_output=True, timeout=30)
        self.assertEqual((r.returncode, r.stdout), (0, b"ok"), r.stderr)
        # front: 2 requests; back: the front's call and curl's; curl: one process transaction
        wait_transactions(col.db, 5)
        col.stop()
        self.masked_by_collector = [int(n) for n in re.findall(r"masked values (\d+)", col.log_text())]

        texts = {}
        for path in glob.glob(col.db + "*"):  # the store and its -wal / -shm files
            with open(path, "rb") as f:
                texts["store file " + os.path.basename(path)] = f.read().decode("latin-1")
        txs = show_json(col.db, "--last", "100")
        texts["show --json"] = "\n".join(json.dumps(t) for t in txs)
        texts["show"] = "\n".join(show_text(col.db, "--id", f"{t['txid']}") for t in txs)
        for fmt in ("md", "html", "json"):
            texts["report " + fmt] = subprocess.run([TXRAY, "report", "--db", col.db, "--format", fmt],
                                                    check=True, capture_output=True, text=True).stdout
        for table in ("summary", "slowest", "names", "sql", "calls", "repeated", "histogram"):
            r = subprocess.run([TXRAY, "report", "--db", col.db, "--format", "csv", "--table", table],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            texts["report csv " + table] = r.stdout
        if otlp:
            wait_for_spans(otlp, 5)
            texts["otlp forwarded"] = "\n".join(json.dumps(s) for s in otlp.spans())
            exp = Receiver(self, self.tmp, "export")
            r = subprocess.run([TXRAY, "export", "--db", col.db, "--otlp-endpoint", exp.endpoint, "--until", "4102444800"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            texts["otlp export"] = "\n".join(json.dumps(s) for s in exp.spans())
            self.assertTrue(texts["otlp export"], "the export sent no spans")
            exp.stop()
        return txs, texts

    def found(self, texts, secret):
        return [where for where, text in texts.items() if secret in text]

    def test_no_secret_is_stored_by_default(self):
        otlp = Receiver(self, self.tmp) if receiver_installed() else None
        self.assertIsNotNone(otlp, "the OTLP receiver is not installed (scripts/install-deps.sh)")
        txs, texts = self.run_services({}, otlp)
        leaks = {s: self.found(texts, s) for s in SECRETS}
        self.assertEqual({s: w for s, w in leaks.items() if w}, {},
                         "secrets found (secret -> where it was planted: " + json.dumps(SECRETS) + ")")
        # What is kept is still there: names, masked shapes, the kept parameter.
        by_app = {}
        for t in txs:
            by_app.setdefault(t["app"], []).append(t)
        names = sorted(t["name"] for t in by_app["front"])
        self.assertEqual(names, ["GET /login", "GET /reset/*"])
        login = next(t for t in by_app["front"] if t["name"] == "GET /login")
        self.assertEqual(login["attributes"]["query"], "password=?&next=?&page=?")
        self.assertNotIn("values", login["attributes"])
        call = next(s for s in login["steps"] if s["kind"] == "HTTP_CALL")
        self.assertIn("/x?api_key=?&user=?", call["text"])
        sql = [s["text"] for s in login["steps"] if s["kind"] == "SQL"]
        self.assertIn("SELECT name FROM users WHERE pw = ?", sql)
        curl = by_app["curl"][0]
        curl_call = next(s for s in curl["steps"] if s["kind"] == "HTTP_CALL")
        self.assertIn("bob:?@127.0.0.1", curl_call["text"])
        self.assertIn("/y?token=?&user=?", curl_call["text"])
        self.assertNotIn("VALUES", texts["show"])
        # The agent's own masks leave the collector's second line nothing to mask (it skips a "?").
        self.assertTrue(self.masked_by_collector, "no status line")
        self.assertEqual(self.masked_by_collector[-1], 0)
        otlp.stop()

    def test_keep_query_keeps_only_the_named_parameters(self):
        txs, texts = self.run_services({"TXRAY_KEEP_QUERY": "next,user"})
        login = next(t for t in txs if t["name"] == "GET /login")
        self.assertEqual(login["attributes"]["query"], "password=?&next=NEXTPAGE31&page=?")
        self.assertEqual(self.found(texts, "PASSWORD777"), [])
        self.assertTrue(self.found(texts, "BOBSNAME29"))

    def test_raw_values_only_on_purpose_and_shown(self):
        txs, texts = self.run_services({"TXRAY_VALUES": "raw"})
        for secret in ("NEXTPAGE31", "BOBSNAME29", "SQLLITERAL55", "SQLBIND66"):
            self.assertTrue(self.found(texts, secret), f"{secret} ({SECRETS[secret]}) not kept in raw mode")
        # Headers are never recorded, raw or not; nor what the collector's second line masks on ingest
        # (parameters named like credentials, userinfo passwords).
        for secret in ("COOKIESECRET", "SETCOOKIE44", "BEARERTOKEN88", "CURLBEARER12", "PASSWORD777",
                       "SUPERKEY123", "CURLTOKEN11", "USERINFOPW99"):
            self.assertEqual(self.found(texts, secret), [], f"{secret} ({SECRETS[secret]})")
        for t in txs:
            self.assertEqual(t["attributes"].get("values"), "raw", t["name"])
        self.assertGreater(self.masked_by_collector[-1], 0)  # raw values named like credentials: the second line
        self.assertEqual(texts["show"].count("VALUES"), len(txs))


def wait_for_spans(receiver, n, timeout=30):
    from txraytest import wait_for
    wait_for(lambda: len(receiver.spans()) >= n, timeout=timeout, what=f"{n} spans at the OTLP receiver")


if __name__ == "__main__":
    unittest.main()
