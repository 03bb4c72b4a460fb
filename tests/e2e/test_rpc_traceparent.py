"""Inbound trace context (issue 4): a request that carries `traceparent` joins that trace — the
server's transaction has its trace id and the caller's span id as parent — and one without starts a
new trace. The server is python3 http.server under the agent; the client is curl without it, then
curl under the agent too, whose inserted header links its HTTP_CALL row to the server's transaction.
"""
import os
import subprocess
import unittest

from txraytest import (PYTHON, TXRAY, Collector, TxrayTestCase, agent_env, bare_env, free_port, show_json,
                       wait_port, wait_transactions)

CURL = "/usr/bin/curl"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


class TraceparentTest(TxrayTestCase):
    def test_inbound_traceparent_joins_the_trace(self):
        with open(os.path.join(self.tmp, "f.txt"), "w") as f:
            f.write("hello\n")
        port = free_port()
        with Collector(self.tmp) as col:
            self.spawn([PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port)], cwd=self.tmp,
                       env=agent_env(col.endpoint, app="web"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)
            url = f"http://127.0.0.1:{port}/f.txt"
            for extra in (["-H", f"traceparent: 00-{TRACE}-{SPAN}-01"], [],
                          ["-H", "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01"]):
                r = subprocess.run([CURL, "-s", *extra, url], capture_output=True, env=bare_env(), timeout=30)
                self.assertEqual(r.stdout, b"hello\n")
            wait_transactions(col.db, 3)
        txs = [t for t in show_json(col.db, "--last", "10") if t["name"] == "GET /f.txt"]
        txs.sort(key=lambda t: t["start_unix_ns"])
        self.assertEqual(len(txs), 3)
        joined, fresh, invalid = txs
        self.assertEqual(joined["trace_id"], TRACE)
        self.assertEqual(joined["parent_span_id"], SPAN)
        self.assertNotEqual(joined["span_id"], SPAN)
        for t in (fresh, invalid):  # no header, or an invalid one: a new trace of its own
            self.assertRegex(t["trace_id"], "^[0-9a-f]{32}$")
            self.assertNotEqual(t["trace_id"], TRACE)
            self.assertNotEqual(t["trace_id"], "0" * 32)
            self.assertEqual(t["parent_span_id"], "0000000000000000")
        self.assertNotEqual(fresh["trace_id"], invalid["trace_id"])

    def test_traced_curl_links_to_the_traced_server(self):
        with open(os.path.join(self.tmp, "f.txt"), "w") as f:
            f.write("hello\n")
        port = free_port()
        with Collector(self.tmp) as col:
            self.spawn([PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port)], cwd=self.tmp,
                       env=agent_env(col.endpoint, app="web"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)
            r = subprocess.run([TXRAY, "run", "--collector", col.endpoint, "--app", "curl", "--mode", "process", "--",
                                CURL, "-s", f"http://127.0.0.1:{port}/f.txt"], capture_output=True, timeout=30)
            self.assertEqual(r.stdout, b"hello\n")  # the inserted header changes nothing curl sees
            wait_transactions(col.db, 2)
        txs = show_json(col.db, "--last", "5")
        [caller] = [t for t in txs if t["app"] == "curl"]
        [callee] = [t for t in txs if t["app"] == "web"]
        [call] = [s for s in caller["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(callee["trace_id"], caller["trace_id"])
        self.assertEqual(callee["parent_span_id"], call["span_id"])
        self.assertEqual(call["callee_txid"], callee["txid"])


if __name__ == "__main__":
    unittest.main()
