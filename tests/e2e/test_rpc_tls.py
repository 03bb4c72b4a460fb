"""HTTPS calls through OpenSSL (issue 4): a Python client (the ssl module, OpenSSL 3) under the agent
makes keep-alive HTTPS requests to a local TLS server: one HTTP_CALL row each, scheme https, plaintext
bytes as the row's bytes and the TLS bytes on the wire as attributes. curl over HTTPS gives exactly one
row per transfer (its SSL_read/SSL_write are not counted a second time).
"""
import os
import subprocess
import textwrap
import unittest

from txraytest import (PYTHON, TXRAY, Collector, TxrayTestCase, bare_env, check_sums, free_port, show_json,
                       wait_port, wait_transactions)

SERVER = textwrap.dedent("""
    import http.server, ssl, sys
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            body = b"x" * int(self.path.split("?")[0].rsplit("/", 1)[1])
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()
""")

CLIENT = textwrap.dedent("""
    import http.client, ssl, sys
    ctx = ssl.create_default_context(cafile=sys.argv[2])
    conn = http.client.HTTPSConnection("localhost", int(sys.argv[1]), context=ctx)
    for n in (100, 5000, 70000):
        conn.request("GET", f"/size/{n}?k=v")
        r = conn.getresponse()
        assert len(r.read()) == n
    conn.close()
    print("ok")
""")

SIZES = (100, 5000, 70000)


class TlsTest(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.cert, self.key = os.path.join(self.tmp, "cert.pem"), os.path.join(self.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost", "-keyout", self.key, "-out", self.cert],
                       check=True, capture_output=True)
        for name, text in (("server.py", SERVER), ("client.py", CLIENT)):
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)
        self.port = free_port()
        self.spawn([PYTHON, os.path.join(self.tmp, "server.py"), str(self.port), self.cert, self.key], env=bare_env())
        wait_port(self.port)

    def traced(self, col, args):
        r = subprocess.run([TXRAY, "run", "--collector", col.endpoint, "--mode", "process", "--", *args],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_python_https_client(self):
        with Collector(self.tmp) as col:
            out = self.traced(col, [PYTHON, os.path.join(self.tmp, "client.py"), str(self.port), self.cert])
            wait_transactions(col.db, 1)
        self.assertEqual(out.strip(), "ok")
        [tx] = show_json(col.db, "--last", "5")
        check_sums(self, tx)
        calls = [s for s in tx["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(len(calls), len(SIZES), [s["text"] for s in calls])
        for call, n in zip(calls, SIZES):
            self.assertEqual(call["url"], f"https://localhost:{self.port}/size/{n}?k=?")
            self.assertEqual(call["status"], 200)
            self.assertGreater(call["bytes_read"], n)          # head + body, plaintext
            self.assertLess(call["bytes_read"], n + 500)
            attrs = call["attributes"]
            self.assertGreater(int(attrs["wire_bytes_read"]), call["bytes_read"])      # TLS records cost bytes
            self.assertGreater(int(attrs["wire_bytes_written"]), call["bytes_written"])
        self.assertEqual(tx["call_count"], len(SIZES))

    def test_curl_https_is_one_row(self):
        url = f"https://localhost:{self.port}/size/3000"
        with Collector(self.tmp) as col:
            self.traced(col, ["/usr/bin/curl", "-s", "--cacert", self.cert, "-o", "/dev/null", url])
            wait_transactions(col.db, 1)
        [tx] = show_json(col.db, "--last", "5")
        calls = [s for s in tx["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(len(calls), 1, [s["text"] for s in calls])
        self.assertEqual(calls[0]["url"], url)
        self.assertEqual(calls[0]["status"], 200)
        self.assertIn("tls_us", calls[0]["attributes"])


if __name__ == "__main__":
    unittest.main()
