"""The relay sample, bare: bodies round-trip byte for byte through every compression setting."""
import gzip
import json
import os
import socket
import subprocess
import tempfile
import unittest

from sampletools import BIN, Server, http_get

TEXT_KB = 256


def backend(**kw):
    return Server([os.path.join(BIN, "txray-relay-backend"), "--text-kb", str(TEXT_KB)] +
                  [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()])


def relay(backend_server, **kw):
    return Server([os.path.join(BIN, "txray-relay"), "--backend", backend_server.addr()] +
                  [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()])


class RelayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="txray-relay-")
        cls.backend = backend()
        status, headers, body = http_get(cls.backend.port, "/text")
        assert status == 200, status
        cls.text = body

    @classmethod
    def tearDownClass(cls):
        cls.backend.stop()
        cls.tmp.cleanup()

    def client(self, relay_server, gzip_on, n=3, concurrency=2):
        out = os.path.join(self.tmp.name, f"page-{relay_server.port}-{gzip_on}.txt")
        r = subprocess.run([os.path.join(BIN, "txray-relay-client"), "--relay", relay_server.addr(), "-n", str(n),
                            "-c", str(concurrency), "--gzip", "on" if gzip_on else "off", "--save", out, "--json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        stats = json.loads(r.stdout)
        with open(out, "rb") as f:
            return stats, f.read()

    def test_backend_text_and_gzip(self):
        self.assertEqual(len(self.text), TEXT_KB * 1024)
        status, headers, body = http_get(self.backend.port, "/text", {"Accept-Encoding": "gzip"})
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("content-encoding"), "gzip")
        self.assertLess(len(body), len(self.text) // 2)
        self.assertEqual(gzip.decompress(body), self.text)
        # Deterministic: a second back-end produces the same document.
        with backend() as other:
            self.assertEqual(http_get(other.port, "/text")[2], self.text)

    def test_round_trip_every_setting(self):
        for inner in ("on", "off"):
            for outer in ("on", "off"):
                with relay(self.backend, inner_gzip=inner, outer_gzip=outer) as r:
                    for client_gzip in (True, False):
                        with self.subTest(inner=inner, outer=outer, client_gzip=client_gzip):
                            stats, text = self.client(r, client_gzip)
                            self.assertEqual(stats["errors"], 0)
                            self.assertEqual(stats["requests"], 3)
                            self.assertEqual(text, self.text, "page text differs from the back-end's text")
                            if outer == "on" and client_gzip:
                                self.assertLess(stats["body_bytes"], len(self.text) / 2)
                            else:
                                self.assertGreater(stats["body_bytes"], len(self.text))

    def test_relay_reports_decompression(self):
        with relay(self.backend, inner_gzip="on") as on, relay(self.backend, inner_gzip="off") as off:
            _, h_on, body = http_get(on.port, "/page", {"Accept-Encoding": "gzip"})
            self.assertEqual(h_on["content-encoding"], "gzip")
            self.assertIn(b"</pre></body></html>", gzip.decompress(body))
            self.assertGreater(int(h_on["x-relay-decompress-cpu-ns"]), 0)
            self.assertLess(int(h_on["x-relay-backend-bytes"]), len(self.text) // 2)
            _, h_off, _ = http_get(off.port, "/page", {"Accept-Encoding": "gzip"})
            self.assertEqual(int(h_off["x-relay-decompress-cpu-ns"]), 0)
            self.assertGreater(int(h_off["x-relay-backend-bytes"]), len(self.text))

    def test_errors(self):
        with relay(self.backend) as r:
            self.assertEqual(http_get(r.port, "/nothing")[0], 404)
            with socket.create_connection(("127.0.0.1", r.port), timeout=10) as s:
                s.sendall(b"NOT HTTP\r\n\r\n")
                self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 400"))
        # A back-end that is not there: the relay answers 500 with the reason, and keeps serving.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            dead = probe.getsockname()[1]
        with Server([os.path.join(BIN, "txray-relay"), "--backend", f"127.0.0.1:{dead}"]) as r:
            status, _, body = http_get(r.port, "/page")
            self.assertEqual(status, 500)
            self.assertIn(b"connect", body)
            self.assertEqual(http_get(r.port, "/health")[0], 200)

    def test_bad_arguments(self):
        r = subprocess.run([os.path.join(BIN, "txray-relay"), "--backend", "127.0.0.1:1", "--inner-gzip", "maybe"],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("inner-gzip", r.stderr)


if __name__ == "__main__":
    unittest.main()
