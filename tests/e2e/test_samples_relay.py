"""The GZIP case under the agent (issue 7, finding 2): the relay's slowest profile shows the socket read of
the back-end's compressed body, then a CPU-bound gap (the gunzip row: its GAP spans the relay's own
decompression, its CPU_T is the decompression's CPU); with inner compression off the row after the read
holds no decompression (the gaps of both runs are printed: wall times of different requests)."""
import gzip
import os
import statistics
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "samples"))

from sampletools import BIN, Server, http_get  # noqa: E402
from txraytest import Collector, TxrayTestCase, agent_env, check_sums, show_json, wait_transactions  # noqa: E402

REQUESTS = 3


def after_socket_close(tx, backend_port):
    """(SOCKET_CLOSE row of the socket to the back-end, the row right after it)."""
    steps = tx["steps"]
    sockets = [s for s in steps if s["kind"] == "SOCKET" and s.get("attributes", {}).get("port") == str(backend_port)]
    if len(sockets) != 1:
        raise AssertionError(f"expected one SOCKET to port {backend_port} in {tx['name']}: {steps}")
    for i, s in enumerate(steps):
        if s["kind"] == "SOCKET_CLOSE" and s.get("id") == sockets[0].get("id") and i + 1 < len(steps):
            return s, steps[i + 1]
    raise AssertionError(f"no SOCKET_CLOSE for the back-end socket in {tx['name']}: {steps}")


class RelayUnderAgentTest(TxrayTestCase):
    def run_relay(self, collector, backend, inner):
        relay = Server([os.path.join(BIN, "txray-relay"), "--backend", backend.addr(), f"--inner-gzip={inner}"],
                       env=agent_env(collector.endpoint, app=f"relay-{inner}"))
        try:
            headers = []
            for _ in range(REQUESTS):
                status, h, body = http_get(relay.port, "/page", {"Accept-Encoding": "gzip"}, timeout=120)
                self.assertEqual(status, 200)
                # Under the agent the page still carries the back-end's text byte for byte.
                self.assertTrue(gzip.decompress(body).endswith(self.text + b"</pre></body></html>\n"))
                headers.append(h)
        finally:
            self.assertEqual(relay.stop(), 0)
        return headers

    def test_gzip_gap(self):
        with Collector(self.tmp) as c:
            backend = Server([os.path.join(BIN, "txray-relay-backend")], env=agent_env(c.endpoint, app="relay-backend"))
            try:
                self.text = http_get(backend.port, "/text")[2]
                self.assertEqual(len(self.text), 8192 * 1024)
                on = self.run_relay(c, backend, "on")
                off = self.run_relay(c, backend, "off")
            finally:
                self.assertEqual(backend.stop(), 0)
            wait_transactions(c.db, 4 * REQUESTS + 1)
        backend_port = backend.port

        # With inner compression on. Requests were sequential, so the transactions (oldest first) pair up
        # with the responses, which carry what the relay itself measured around its decompression.
        txs = show_json(c.db, "--app", "relay-on", "--last", str(REQUESTS))
        self.assertEqual([t["name"] for t in txs], ["GET /page"] * REQUESTS)
        slowest = show_json(c.db, "--app", "relay-on", "--slowest", "1")[0]
        backend_bytes = {int(h["x-relay-backend-bytes"]) for h in on}
        ratios = []
        self.assertEqual(len(backend_bytes), 1, "the compressed body has one size")
        for tx, h in zip(txs, on):
            check_sums(self, tx)
            close, row = after_socket_close(tx, backend_port)
            self.assertIn(close["bytes_read"], backend_bytes, "SOCKET_CLOSE carries the back-end's bytes")
            self.assertLess(close["bytes_read"], 4 * 1024 * 1024, "the body came compressed")
            self.assertTrue(row["text"].startswith("gunzip"), row)
            cpu, wall = int(h["x-relay-decompress-cpu-ns"]), int(h["x-relay-decompress-wall-ns"])
            self.assertGreater(cpu, 0)
            # The row after the read is the decompression: its GAP spans it, its CPU_T is its CPU. Both are
            # readings of the same clocks around a larger interval than the relay's own (containment: a
            # loaded machine moves both sides alike); 0.9 for the switch-checked CPU clock's reads, and
            # what the row holds besides (a few hundred us) under 1.2x + 5 ms.
            self.assertGreaterEqual(row["gap_ns"], wall)
            self.assertGreaterEqual(row["cpu_ns"], 0.9 * cpu, row)
            self.assertLessEqual(row["cpu_ns"], 1.2 * cpu + 5e6, row)
            # CPU-bound: CPU_T close to GAP, as close as the relay's own clocks say the decompression ran
            # (on an idle machine both ratios are ~1). Printed, not asserted: the rest of the row's GAP is
            # wall time, which a preemption there stretches.
            ratios.append(f"{row['cpu_ns'] / row['gap_ns']:.2f} (relay's own {cpu / wall:.2f})")
            if tx["txid"] == slowest["txid"]:
                gap_row, decompress_cpu_ns = row, cpu
        self.assertIn(slowest["txid"], [t["txid"] for t in txs])

        # With inner compression off: the same row right after the read, now with nothing to decompress.
        gaps_off = []
        for tx in show_json(c.db, "--app", "relay-off", "--last", str(REQUESTS)):
            check_sums(self, tx)
            close_off, row_off = after_socket_close(tx, backend_port)
            self.assertGreater(close_off["bytes_read"], 8 * 1024 * 1024, "the body came uncompressed")
            self.assertTrue(row_off["text"].startswith("identity body"), row_off)
            gaps_off.append(row_off["gap_ns"])
        self.assertTrue(all(int(h["x-relay-decompress-cpu-ns"]) == 0 for h in off))
        # The finding: without inner compression the gap after the read shrinks by the decompression
        # time. What decides it: with compression the row after the read holds the decompression (its GAP
        # at least the relay's own wall time of it, above), without it there is none (the relay measured
        # 0 ns) and the body came uncompressed. The two gaps are wall times of different requests, which
        # a preempted request moves by a scheduler slice: printed, not compared.
        off_gap = statistics.median(gaps_off)
        print(f"\ngap after the read: {gap_row['gap_ns'] / 1e6:.1f} ms with gzip (decompression "
              f"{decompress_cpu_ns / 1e6:.1f} ms of CPU), median {off_gap / 1e6:.1f} ms without "
              f"({', '.join(f'{g / 1e6:.1f}' for g in gaps_off)}); CPU_T / GAP of the gunzip rows: {', '.join(ratios)}",
              flush=True)

        # The outbound call itself (the article's TX-CALL): one HTTP_CALL to the back-end's /text, whose
        # callee is the back-end's own GET /text transaction.
        calls = [s for s in slowest["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(len(calls), 1, slowest["steps"])
        self.assertEqual(calls[0]["url"], f"http://127.0.0.1:{backend_port}/text")
        self.assertEqual(calls[0]["status"], 200)
        self.assertIn(calls[0]["bytes_read"], backend_bytes)
        callee = show_json(c.db, "--id", calls[0]["callee_txid"])[0]
        self.assertEqual((callee["app"], callee["name"]), ("relay-backend", "GET /text"))

        # The back-end's own transactions: GET /text, the compressed body written.
        texts = show_json(c.db, "--app", "relay-backend", "--last", str(2 * REQUESTS))
        self.assertEqual({t["name"] for t in texts}, {"GET /text"})
        self.assertIn(min(t["bytes_written"] for t in texts), range(min(backend_bytes) - 1000, min(backend_bytes) + 1))


if __name__ == "__main__":
    unittest.main()
