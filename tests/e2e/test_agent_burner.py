"""The burner sample under the agent: its profile shows SOCKET with the back-end's port, SOCKET_CLOSE with
exactly N bytes read, and the ~50 ms CPU burn in the END row's CPU_T (the row after SOCKET_CLOSE).
A pre-forking server reports transactions from its workers."""
from agenttools import curl, start_backend, start_burner, stop
from txraytest import Collector, TxrayTestCase, check_sums, show_json, wait_transactions

N = 123457
BURN_MS = 50


class AgentBurner(TxrayTestCase):
    def test_profile_shows_socket_bytes_and_cpu_burn(self):
        backend = start_backend(self, N)
        with Collector(self.tmp) as c:
            server, port = start_burner(self, c.endpoint, backend, burn_ms=BURN_MS)
            for _ in range(3):
                self.assertEqual(curl(f"http://127.0.0.1:{port}/work")[0], 200)
            wait_transactions(c.db, 3)
            stop(server)
        txs = show_json(c.db, "--last", "10")
        self.assertEqual(len(txs), 3)
        for t in txs:
            check_sums(self, t)
            kinds = [s["kind"] for s in t["steps"]]
            self.assertEqual(kinds, ["START", "SOCKET", "SOCKET_CLOSE", "END"], kinds)
            sock, close, end = t["steps"][1], t["steps"][2], t["steps"][3]
            self.assertEqual(sock["attributes"]["port"], str(backend))
            self.assertEqual(sock["attributes"]["addr"], "127.0.0.1")
            self.assertNotEqual(sock["attributes"]["localport"], "0")
            self.assertEqual(sock["error"], "")
            self.assertEqual(close["bytes_read"], N)
            self.assertEqual(close["bytes_written"], 0)
            self.assertEqual(close["id"], sock["id"])
            # The burn happens after the socket is closed: it is the END row's CPU_T.
            self.assertAlmostEqual(end["cpu_ns"] / 1e6, BURN_MS, delta=BURN_MS * 0.10)
            self.assertLess(sock["cpu_ns"] + close["cpu_ns"], 0.1 * BURN_MS * 1e6)

    def test_forked_workers_report_transactions(self):
        backend = start_backend(self, 1000)
        with Collector(self.tmp) as c:
            server, port = start_burner(self, c.endpoint, backend, burn_ms=1, workers=2)
            for _ in range(10):
                self.assertEqual(curl(f"http://127.0.0.1:{port}/w")[0], 200)
            wait_transactions(c.db, 11)  # the parent's "startup" + 10 requests
            stop(server)
        txs = show_json(c.db, "--last", "100")
        startup = [t for t in txs if t["name"] == "startup"]
        work = [t for t in txs if t["name"] == "GET /w"]
        self.assertEqual(len(startup), 1)
        self.assertEqual(len(work), 10)
        parent_pid = startup[0]["pid"]
        self.assertEqual(startup[0]["pid"], server.pid)
        self.assertTrue(all(t["pid"] != parent_pid for t in work))
        self.assertTrue(all(t["agent_instance"] != startup[0]["agent_instance"] for t in work))
        for t in work:
            check_sums(self, t)
            self.assertEqual(t["steps"][2]["bytes_read"], 1000)
