"""Cross-service tracing (issue 4): a front service that calls a back-end over plain HTTP for every
request, both under the agent. Under load (200 front requests from 4 concurrent keep-alive clients):
every front HTTP_CALL row links to exactly one back-end transaction of the same trace, whose parent
span id is the call's span id; `show --trace` prints both; and the front's answers are byte-for-byte
those of a run without the agent (the inserted traceparent header changes nothing the programs see).
"""
import http.client
import os
import subprocess
import threading
import unittest

from txraytest import (BIN, TXRAY, Collector, TxrayTestCase, agent_env, bare_env, check_sums, free_port,
                       show_json, show_text, wait_port, wait_transactions)

FRONT = os.path.join(BIN, "two_service_front")
BACK = os.path.join(BIN, "two_service_back")
REQUESTS = 200
CLIENTS = 4


def fetch_all(port):
    """GET /order/<i> for i in 0..REQUESTS-1 over CLIENTS keep-alive connections; {i: (status, body)}."""
    out = {}
    lock = threading.Lock()

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(k, REQUESTS, CLIENTS):
            conn.request("GET", f"/order/{i}")
            r = conn.getresponse()
            body = r.read()
            with lock:
                out[i] = (r.status, body)
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


class TwoServiceTest(TxrayTestCase):
    def start_pair(self, env_front, env_back):
        fport, bport = free_port(), free_port()
        back = self.spawn([BACK, "--port", str(bport)], env=env_back, stdout=subprocess.DEVNULL)
        wait_port(bport)
        front = self.spawn([FRONT, "--port", str(fport), "--backend", str(bport)], env=env_front,
                           stdout=subprocess.DEVNULL)
        wait_port(fport)
        return fport, (front, back)

    def stop(self, procs):
        for p in procs:
            p.terminate()
            p.wait(timeout=10)

    def test_every_call_links_to_one_backend_transaction(self):
        # Baseline without the agent.
        port, procs = self.start_pair(bare_env(), bare_env())
        bare = fetch_all(port)
        self.stop(procs)
        self.assertEqual(len(bare), REQUESTS)
        self.assertTrue(all(status == 200 for status, _ in bare.values()))

        with Collector(self.tmp) as col:
            port, procs = self.start_pair(agent_env(col.endpoint, app="front"), agent_env(col.endpoint, app="back"))
            traced = fetch_all(port)
            wait_transactions(col.db, 2 * REQUESTS)
            self.stop(procs)
        self.assertEqual(traced, bare, "the front's answers differ with the agent")

        txs = show_json(col.db, "--last", str(4 * REQUESTS))
        front = [t for t in txs if t["app"] == "front"]
        back = [t for t in txs if t["app"] == "back"]
        self.assertEqual(len(front), REQUESTS)
        self.assertEqual(len(back), REQUESTS)
        back_by_txid = {t["txid"]: t for t in back}
        linked = set()
        for t in front:
            check_sums(self, t)
            self.assertTrue(t["name"].startswith("GET /order/"), t["name"])
            calls = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"]
            self.assertEqual(len(calls), 1, f"{t['name']}: {calls}")
            call = calls[0]
            oid = t["name"].split("/")[-1]
            self.assertEqual(call["status"], 200)
            self.assertTrue(call["url"].endswith(f"/price/{oid}"), call["url"])
            self.assertIn("callee_txid", call, f"call of {t['name']} not linked")
            callee = back_by_txid[call["callee_txid"]]
            self.assertEqual(callee["name"], f"GET /price/{oid}")
            self.assertEqual(callee["trace_id"], t["trace_id"])
            self.assertEqual(callee["parent_span_id"], call["span_id"])
            self.assertEqual(t["parent_span_id"], "0000000000000000")
            self.assertGreater(call["elapsed_ns"], 0)
            self.assertGreaterEqual(callee["elapsed_ns"] * 1.0, 0)
            # what the front wrote and read on the call (its own bytes, the inserted header excluded)
            self.assertGreater(call["bytes_written"], 0)
            self.assertGreater(call["bytes_read"], 0)
            self.assertNotIn(callee["txid"], linked, "a back-end transaction linked twice")
            linked.add(callee["txid"])
        self.assertEqual(len(linked), REQUESTS)
        for t in back:
            check_sums(self, t)

        # show --trace prints the tree of one trace: the front transaction and, indented, its callee.
        one = front[0]
        out = show_text(col.db, "--trace", one["trace_id"])
        self.assertIn(one["name"], out)
        callee_name = back_by_txid[[s for s in one["steps"] if s["kind"] == "HTTP_CALL"][0]["callee_txid"]]["name"]
        self.assertIn(callee_name, out)
        self.assertLess(out.index(one["name"]), out.index(callee_name))

    def test_propagation_off(self):
        """TXRAY_PROPAGATE=0: no header, so the back-end starts traces of its own; the calls are still rows."""
        with Collector(self.tmp) as col:
            port, procs = self.start_pair(agent_env(col.endpoint, app="front", extra={"TXRAY_PROPAGATE": "0"}),
                                          agent_env(col.endpoint, app="back"))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for i in range(5):
                conn.request("GET", f"/order/{i}")
                self.assertEqual(conn.getresponse().read()[:6], b"order ")
            conn.close()
            wait_transactions(col.db, 10)
            self.stop(procs)
        txs = show_json(col.db, "--last", "10")
        front = [t for t in txs if t["app"] == "front"]
        back = [t for t in txs if t["app"] == "back"]
        self.assertEqual(len(front), 5)
        fronts_traces = {t["trace_id"] for t in front}
        for t in back:
            self.assertEqual(t["parent_span_id"], "0000000000000000")
            self.assertNotIn(t["trace_id"], fronts_traces)
        for t in front:
            calls = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"]
            self.assertEqual(len(calls), 1)
            self.assertNotIn("callee_txid", calls[0])


if __name__ == "__main__":
    unittest.main()
