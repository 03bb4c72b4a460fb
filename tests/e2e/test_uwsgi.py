"""uWSGI behind nginx, as people run it: Debian's uWSGI (uwsgi-core, uwsgi-plugin-python3) with
`--socket` (the uwsgi binary protocol), 2 worker processes forked from a master that loaded the app, 4
threads each; nginx's uwsgi_pass over TCP and over a Unix socket; both under the agent, and a traced
back-end (attr/back.py).

Each request `GET /r/<i>` runs a WSGI app that makes one sqlite3 statement whose text names the request
(`req_<i>`) and one urllib call to the back-end (`/b/<i>`); every third answer has no Content-Length
(uWSGI then ends it by closing the connection). Under 8 concurrent keep-alive clients, then 24 `POST
/p/<i>` with bodies of known sizes (the last one 200 KB: nginx buffers it in a file and, with `sendfile
on` as in Debian's nginx.conf, sends it to uWSGI by sendfile), per case:
- every answer is right (the agent changes nothing the programs see);
- nginx: one transaction per request, whose one HTTP_CALL row (protocol=uwsgi) is linked to the uWSGI
  transaction of the same request (same trace id, the callee's parent span = the row's span id) — at
  least 99% of them, and none linked to another request's; the row's bytes read are exactly the bytes
  the uWSGI transaction wrote, its bytes written exactly the request body the uWSGI transaction read;
- uWSGI: exactly one transaction per request (`GET /r/<i>`, protocol=uwsgi) holding its own SQL row and
  its own HTTP_CALL row, linked to the back-end transaction of the same trace.
"""
import os
import signal
import sqlite3
import subprocess
import unittest

import nginxconf
from attribution import ATTR
from txraytest import PYTHON, Collector, TxrayTestCase, agent_env, free_port, get_all, show_json, wait_for, wait_port

NGINX = "/usr/sbin/nginx"
UWSGI = "/usr/bin/uwsgi-core"
PLUGIN = "/usr/lib/uwsgi/plugins/python3_plugin.so"
REQUESTS = 240
CONNECTIONS = 8

# inside nginx's http block (nginxconf.py has the rest)
NGINX_HTTP = """\
  sendfile on;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      include /etc/nginx/uwsgi_params;
      uwsgi_pass {upstream};
    }}
  }}
"""

APP = """\
import os
import sqlite3
import urllib.request

BACK = os.environ["TXRAY_TEST_BACK"]


def application(environ, start_response):
    i = int(environ["PATH_INFO"].rsplit("/", 1)[1])
    if environ["REQUEST_METHOD"] == "POST":
        data = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        body = ("post %d %d" % (i, len(data))).encode()
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]
    con = sqlite3.connect(":memory:")
    v = con.execute("SELECT ? AS req_%d" % i, (1,)).fetchone()[0]
    con.close()
    with urllib.request.urlopen("http://127.0.0.1:%s/b/%d" % (BACK, i), timeout=30) as r:
        b = r.read().decode()
    body = ("uwsgi %d %d %s" % (i, v, b)).encode()
    headers = [("Content-Type", "text/plain")]
    if i % 3:
        headers.append(("Content-Length", str(len(body))))
    start_response("200 OK", headers)
    return [body]
"""


def attr(t, key):
    return (t.get("attributes") or {}).get(key)


def count(db):
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return con.execute("SELECT count(*) FROM transactions WHERE kind IS NOT 'unattributed'").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        con.close()


@unittest.skipUnless(os.access(UWSGI, os.X_OK) and os.path.exists(PLUGIN) and os.access(NGINX, os.X_OK),
                     "uwsgi-core, uwsgi-plugin-python3 and nginx are needed (scripts/install-deps.sh --test)")
class Uwsgi(TxrayTestCase):
    def run_case(self, unix):
        d = self.tmp
        port = free_port()
        listen = os.path.join(d, "uwsgi.sock") if unix else f"127.0.0.1:{free_port()}"
        upstream = f"unix:{listen}" if unix else listen
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(nginxconf.conf(d, NGINX_HTTP.format(port=port, upstream=upstream)))
        with open(os.path.join(d, "app.py"), "w") as f:
            f.write(APP)
        with Collector(d) as col:
            back = free_port()
            self.spawn([PYTHON, os.path.join(ATTR, "back.py"), str(back)], env=agent_env(col.endpoint, app="back"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(back)
            ulog = open(os.path.join(d, "uwsgi.out"), "wb")
            env = agent_env(col.endpoint, app="uwsgi", extra={"TXRAY_TEST_BACK": str(back)})
            uw = self.spawn([UWSGI, "--plugin", PLUGIN, "--master", "--socket", listen, "--chmod-socket=666",
                             "--processes", "2", "--threads", "4", "--wsgi-file", os.path.join(d, "app.py"),
                             "--need-app", "--disable-logging", "--die-on-term", "--worker-reload-mercy", "5"],
                            env=env, stdout=ulog, stderr=subprocess.STDOUT)
            if unix:
                wait_for(lambda: os.path.exists(listen), what="uWSGI's socket")
            else:
                wait_port(int(listen.rsplit(":", 1)[1]))
            nginx = self.spawn([NGINX, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e",
                                os.path.join(d, "nginx-error.log")],
                               env=agent_env(col.endpoint, app="nginx"), stdout=subprocess.DEVNULL)
            wait_port(port)
            out, errors = get_all(port, [f"/r/{i}" for i in range(REQUESTS)], CONNECTIONS)
            self.assertEqual(errors, [])
            answers = {int(p.rsplit("/", 1)[1]): a for p, a in out.items()}
            wrong = {i: a for i, a in answers.items() if a != (200, f"uwsgi {i} 1 b {i}")}
            with open(os.path.join(d, "uwsgi.out"), errors="replace") as f:
                self.assertEqual(wrong, {}, f.read()[-2000:])
            self.assertEqual(len(answers), REQUESTS)
            nginxconf.post_all(self, port)
            # nginx, uWSGI and the back-end: one per request each. The programs are stopped afterwards:
            # what a worker's agent had finished is sent as it goes.
            wait_for(lambda: count(col.db) >= 3 * REQUESTS + 2 * nginxconf.POSTS, 30, what="every transaction")
            nginx.send_signal(signal.SIGQUIT)
            self.assertEqual(nginx.wait(timeout=30), 0)
            uw.send_signal(signal.SIGTERM)
            uw.wait(timeout=30)
            ulog.close()
        self.check(col.db, unix)

    def check(self, db, unix):
        txs = [t for t in show_json(db, "--last", str(20 * REQUESTS)) if t.get("kind") != "unattributed"]
        by_app = {}
        for t in txs:
            by_app.setdefault(t["app"], []).append(t)
        app = [t for t in by_app.get("uwsgi", []) if t["name"].startswith("GET /r/")]
        nginx = [t for t in by_app.get("nginx", []) if t["name"].startswith("GET /r/")]
        self.check_posts([t for t in by_app.get("nginx", []) if t["name"].startswith("POST /p/")],
                         [t for t in by_app.get("uwsgi", []) if t["name"].startswith("POST /p/")])
        back = by_app.get("back", [])
        want = sorted(f"GET /r/{i}" for i in range(REQUESTS))
        # exact counts: one transaction per request on each side, none twice
        self.assertEqual(sorted(t["name"] for t in app), want)
        self.assertEqual(sorted(t["name"] for t in nginx), want)
        self.assertEqual(sorted(t["name"] for t in back), sorted(f"GET /b/{i}" for i in range(REQUESTS)))
        app_by_txid = {t["txid"]: t for t in app}
        back_by_txid = {t["txid"]: t for t in back}

        # nginx's call rows, linked to the uWSGI transaction of the same request
        linked = wrong = 0
        for t in nginx:
            rid = t["name"].rsplit("/", 1)[1]
            calls = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"]
            self.assertEqual(len(calls), 1, f"{t['name']}: {calls}")
            call = calls[0]
            self.assertEqual(attr(call, "protocol"), "uwsgi", call)
            self.assertEqual(attr(call, "method"), "GET", call)
            self.assertTrue(call["url"].startswith("uwsgi://"), call["url"])
            self.assertTrue(call["url"].endswith(f"/r/{rid}"), call["url"])
            self.assertEqual(call.get("status"), 200, call)
            self.assertFalse(call.get("error"), call)
            callee = app_by_txid.get(call.get("callee_txid"))
            if callee is None:
                continue
            if callee["name"] != t["name"]:
                wrong += 1
                continue
            self.assertEqual(callee["trace_id"], t["trace_id"])
            self.assertEqual(callee["parent_span_id"], call["span_id"])
            # the answer as nginx read it is what uWSGI wrote, byte for byte; a GET has no body
            self.assertGreater(call["bytes_read"], 0)
            self.assertEqual(call["bytes_read"], callee["bytes_written"], call)
            self.assertEqual((call["bytes_written"], callee["bytes_read"]), (0, 0), call)
            linked += 1
        line = (f"{'unix' if unix else 'tcp'}: {REQUESTS} requests over {CONNECTIONS} connections: "
                f"nginx call rows linked to their uWSGI transaction {linked} ({100.0 * linked / REQUESTS:.2f}%), "
                f"wrong {wrong}")
        print(line, flush=True)
        self.assertEqual(wrong, 0, line)
        self.assertGreaterEqual(linked, 0.99 * REQUESTS, line)

        # the uWSGI transactions: their own SQL row and outbound call, the call linked to the back-end
        for t in app:
            rid = t["name"].rsplit("/", 1)[1]
            self.assertEqual(attr(t, "protocol"), "uwsgi", t)
            self.assertEqual(t["status"], 200, t)
            sql = [s for s in t["steps"] if s["kind"] == "SQL"]
            named = {s["text"].split("req_", 1)[1].split()[0] for s in sql if "req_" in s["text"]}
            self.assertEqual(named, {rid}, f"{t['name']}: {sql}")
            calls = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"]
            self.assertEqual([s["url"].rsplit("/", 1)[1] for s in calls], [rid], t["name"])
            callee = back_by_txid.get(calls[0].get("callee_txid"))
            self.assertIsNotNone(callee, f"{t['name']}: call {calls[0]['url']} not linked")
            self.assertEqual(callee["trace_id"], t["trace_id"], "the back-end sees the uWSGI trace")
            self.assertEqual(callee["name"], "GET /b/" + rid)

    def check_posts(self, nginx, app):
        """POST /p/<i>: the body's exact size on both sides, the rows linked."""
        self.assertEqual(sorted(t["name"] for t in nginx), sorted(f"POST /p/{i}" for i in range(nginxconf.POSTS)))
        self.assertEqual(sorted(t["name"] for t in app), sorted(f"POST /p/{i}" for i in range(nginxconf.POSTS)))
        app_by_txid = {t["txid"]: t for t in app}
        for t in nginx:
            size = len(nginxconf.post_body(int(t["name"].rsplit("/", 1)[1])))
            call = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"][0]
            self.assertEqual(attr(call, "method"), "POST", call)
            self.assertEqual(call["bytes_written"], size, call)
            callee = app_by_txid.get(call.get("callee_txid"))
            self.assertIsNotNone(callee, call)
            self.assertEqual(callee["name"], t["name"])
            self.assertEqual(callee["bytes_read"], size)
            self.assertEqual(call["bytes_read"], callee["bytes_written"], call)

    def test_tcp(self):
        self.run_case(unix=False)

    def test_unix_socket(self):
        self.run_case(unix=True)


if __name__ == "__main__":
    unittest.main()
