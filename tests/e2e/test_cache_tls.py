"""REDIS rows over TLS: a connection that is TLS from its first byte (redis-server's --tls-port), whose
plaintext the agent reads through the OpenSSL hooks when the client does its TLS with libssl on the
socket — redis-py with ssl=True (Python's ssl module: an SSLSocket on the descriptor) in a threaded
http.server, and redis-cli --tls (hiredis over libssl) in process mode. A throw-away redis-server with
a self-signed certificate and no plaintext port, a real collector. Checked, under 8 concurrent
keep-alive clients with a unique key per request: >= 99% of the requests hold exactly their own SET and
GET rows (TXRAY_CACHE_KEYS=raw: the key names the request), 0 rows in another request; the rows' bytes
are the plaintext's (the RESP the client wrote and read, not the TLS records); the values never reach
the store."""
import os
import shutil
import sqlite3
import subprocess
import unittest

import tlscert
from txraytest import (PYTHON, Collector, TxrayTestCase, agent_env, bare_env, free_port, get_all, show_json,
                       wait_for, wait_port, wait_transactions)

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
VALUE = "tls-val-51c9"  # never kept
REQUESTS = 160
CLIENTS = 8

FRONT = r'''
import http.server, os, socketserver, sys
import redis

PORT, RPORT, VALUE = int(sys.argv[1]), int(sys.argv[2]), os.environ["CACHE_VALUE"]
r = redis.Redis(host="127.0.0.1", port=RPORT, ssl=True, ssl_ca_certs=sys.argv[3])


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        rid = self.path.rsplit("/", 1)[1]
        r.set(f"item:{rid}", f"{VALUE}-{rid}")
        b = r.get(f"item:{rid}")
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


S(("127.0.0.1", PORT), H).serve_forever()
'''


def resp(*args):
    return b"".join([b"*%d\r\n" % len(args)] + [b"$%d\r\n%s\r\n" % (len(a), a) for a in (x.encode() for x in args)])


@unittest.skipUnless(os.access(REDIS_SERVER, os.X_OK) and os.access(REDIS_CLI, os.X_OK) and
                     subprocess.run([PYTHON, "-c", "import redis"], capture_output=True).returncode == 0,
                     "redis-server, redis-tools and python3-redis are needed (scripts/install-deps.sh --test)")
class RedisOverTls(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.cert, self.key = tlscert.self_signed(self.tmp)
        self.rport = free_port()
        self.log = open(os.path.join(self.tmp, "redis.log"), "wb")
        self.redis = self.spawn([REDIS_SERVER, "--port", "0", "--tls-port", str(self.rport), "--bind", "127.0.0.1",
                                 "--tls-cert-file", self.cert, "--tls-key-file", self.key, "--tls-auth-clients", "no",
                                 "--dir", self.tmp, "--save", "", "--appendonly", "no", "--daemonize", "no"],
                                env=bare_env(), stdout=self.log, stderr=subprocess.STDOUT)
        wait_port(self.rport)

    def tearDown(self):
        self.log.close()
        super().tearDown()

    def cli(self, env, *args):
        return subprocess.run([REDIS_CLI, "--tls", "--cacert", self.cert, "-p", str(self.rport), *args], env=env,
                              capture_output=True, text=True, timeout=60)

    def test_redis_py_threaded_server(self):
        front = os.path.join(self.tmp, "front.py")
        with open(front, "w") as f:
            f.write(FRONT)
        with Collector(self.tmp) as col:
            port = free_port()
            self.spawn([PYTHON, front, str(port), str(self.rport), self.cert],
                       env=agent_env(col.endpoint, app="front", extra={"TXRAY_CACHE_KEYS": "raw", "CACHE_VALUE": VALUE}),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)
            out, errors = get_all(port, [f"/kv/{i}" for i in range(REQUESTS)], CLIENTS)
            self.assertEqual(errors, [])
            self.assertEqual({p: a for p, a in out.items() if a != (200, f"{VALUE}-{p.rsplit('/', 1)[1]}")}, {})
            wait_for(lambda: len([t for t in show_json(col.db, "--last", "1000") if t["name"].startswith("GET /kv/")])
                     >= REQUESTS, 30, what="every request's transaction")
            txs = [t for t in show_json(col.db, "--last", "1000") if t["name"].startswith("GET /kv/")]
            own = wrong = 0
            for t in txs:
                rid = t["name"].rsplit("/", 1)[1]
                rows = [s for s in t["steps"] if s["kind"] == "REDIS"]
                wrong += sum(1 for s in rows if s["text"].split(" ", 1)[1] != f"item:{rid}")
                if sorted(s["text"] for s in rows) == [f"GET item:{rid}", f"SET item:{rid}"]:
                    own += 1
                    for s in rows:  # the plaintext's bytes: the RESP written and read
                        if s["text"].startswith("SET"):
                            self.assertEqual(s["bytes_written"], len(resp("SET", f"item:{rid}", f"{VALUE}-{rid}")))
                            self.assertEqual(s["bytes_read"], len(b"+OK\r\n"))
                        else:
                            self.assertEqual(s["bytes_written"], len(resp("GET", f"item:{rid}")))
                            v = f"{VALUE}-{rid}"
                            self.assertEqual(s["bytes_read"], len(b"$%d\r\n%s\r\n" % (len(v), v.encode())))
            line = f"redis-py over TLS: {REQUESTS} requests, own SET and GET rows {own}, rows in another request {wrong}"
            print(line, flush=True)
            self.assertEqual(wrong, 0, line)
            self.assertGreaterEqual(own, 0.99 * REQUESTS, line)
            con = sqlite3.connect(col.db)
            texts = " ".join(r[0] for r in con.execute("SELECT text FROM texts"))
            attrs = " ".join(r[0] or "" for r in con.execute("SELECT attributes FROM steps"))
            con.close()
            self.assertNotIn(VALUE, texts + attrs)

    def test_redis_cli_process_mode(self):
        with Collector(self.tmp) as col:
            env = agent_env(col.endpoint, app="cli", mode="process", extra={"TXRAY_CACHE_KEYS": "raw"})
            for i in range(4):
                p = self.cli(env, "SET", f"cli:{i}", VALUE)
                self.assertEqual(p.stdout.strip(), "OK", p.stderr)
            p = self.cli(bare_env(), "GET", "cli:3")
            self.assertEqual(p.stdout.strip(), VALUE)
            wait_transactions(col.db, 4)
            txs = [t for t in show_json(col.db, "--last", "100") if t.get("kind") != "unattributed"]
            self.assertEqual(len(txs), 4)
            keys = sorted(s["text"] for t in txs for s in t["steps"] if s["kind"] == "REDIS" and s["text"].startswith("SET"))
            self.assertEqual(keys, [f"SET cli:{i}" for i in range(4)])


if __name__ == "__main__":
    unittest.main()
