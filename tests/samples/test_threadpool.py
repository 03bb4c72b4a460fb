"""samples/threadpool without the agent: the pool server answers every request over many concurrent
keep-alive connections, pipelined requests in order, and a malformed request with 400."""
import http.client
import os
import socket
import threading
import unittest

from sampletools import BIN, Server, http_get

SAMPLE = os.path.join(BIN, "txray-threadpool")


def read_all(sock):
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


class ThreadPoolSample(unittest.TestCase):
    def setUp(self):
        self.back = Server([SAMPLE, "backend", "--listen", "127.0.0.1:0"])
        self.front = Server([SAMPLE, "serve", "--listen", "127.0.0.1:0", "--workers", "4", "--backend",
                             f"127.0.0.1:{self.back.ports['http']}"])
        self.port = self.front.ports["http"]

    def tearDown(self):
        self.front.stop()
        self.back.stop()

    def test_concurrent_keep_alive_clients(self):
        wrong = []

        def client(k):
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            for i in range(k, 400, 20):
                conn.request("GET", f"/r/{i}")
                r = conn.getresponse()
                body = r.read().decode()
                if r.status != 200 or body != f"r {i}\nb {i}\n":
                    wrong.append((i, r.status, body))
            conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(wrong, [])

    def test_pipelined_requests_answered_in_order(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(b"GET /r/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /r/2 HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /r/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = read_all(s)
        bodies = [part.split(b"\r\n\r\n", 1)[1][:8] for part in data.split(b"HTTP/1.1 200 OK")[1:]]
        self.assertEqual(bodies, [b"r 1\nb 1\n", b"r 2\nb 2\n", b"r 3\nb 3\n"])

    def test_malformed_and_unknown(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(b"NONSENSE\r\n\r\n")
            self.assertTrue(read_all(s).startswith(b"HTTP/1.1 400 "))
        status = http_get(self.port, "/nothing")[0]
        self.assertEqual(status, 404)


if __name__ == "__main__":
    unittest.main()
