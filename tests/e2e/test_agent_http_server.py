"""The agent in `python3 -m http.server`: 20 curl requests for files of known sizes give 20 transactions
`GET /<file>`, status 200, bytes_written == the bytes curl received; sums hold; show prints a profile."""
import os
import time

from agenttools import curl, start_http_server, stop
from txraytest import Collector, TxrayTestCase, check_sums, show_json, show_text, wait_transactions


class AgentHttpServer(TxrayTestCase):
    def one_file_folder(self):
        """A folder to serve holding one small file, a.txt."""
        folder = os.path.join(self.tmp, "www")
        os.makedirs(folder)
        with open(os.path.join(folder, "a.txt"), "w") as f:
            f.write("hello\n")
        return folder

    def test_twenty_file_requests(self):
        folder = os.path.join(self.tmp, "www")
        os.makedirs(folder)
        sizes = {}
        for i in range(20):
            name = f"file{i:02d}.bin"
            sizes[name] = 1000 * i + 17 * i * i  # 0 B … ~25 KB, all different
            with open(os.path.join(folder, name), "wb") as f:
                f.write(os.urandom(sizes[name]))
        with Collector(self.tmp) as c:
            server, port = start_http_server(self, c.endpoint, folder)
            received = {}
            for name in sizes:
                code, nbytes = curl(f"http://127.0.0.1:{port}/{name}?v=1")
                self.assertEqual(code, 200)
                received[name] = nbytes
            wait_transactions(c.db, 20)
            stop(server)
        txs = show_json(c.db, "--last", "100")
        self.assertEqual(len(txs), 20)
        by_name = {t["name"]: t for t in txs}
        self.assertEqual(set(by_name), {f"GET /{n}" for n in sizes})
        for name, nbytes in received.items():
            t = by_name[f"GET /{name}"]
            self.assertEqual(t["status"], 200)
            self.assertEqual(t["error"], "")
            self.assertEqual(t["bytes_written"], nbytes, name)
            self.assertEqual(t["attributes"].get("query"), "v=?")  # values masked by default
            self.assertTrue(t["client_addr"].startswith("127.0.0.1:"))
            check_sums(self, t)
        text = show_text(c.db, "--last", "1")
        self.assertIn("GET /file", text)
        self.assertIn("START", text)
        self.assertIn("TOTAL[", text)

    def test_missing_file_is_404_and_keep_alive_is_one_transaction_per_request(self):
        folder = self.one_file_folder()
        with Collector(self.tmp) as c:
            server, port = start_http_server(self, c.endpoint, folder)
            code, _ = curl(f"http://127.0.0.1:{port}/missing")
            self.assertEqual(code, 404)
            wait_transactions(c.db, 1)
            stop(server)
        (t,) = show_json(c.db, "--last", "10")
        self.assertEqual(t["name"], "GET /missing")
        self.assertEqual(t["status"], 404)
        check_sums(self, t)

    def test_idle_service_agent_thread_sleeps_and_wakes_for_the_next_request(self):
        """An idle service is not woken 200 times a second by its agent: a second without transactions
        puts the agent thread into its long wait (200 ms), and the next request still arrives."""
        folder = self.one_file_folder()
        with Collector(self.tmp) as c:
            server, port = start_http_server(self, c.endpoint, folder)
            self.assertEqual(curl(f"http://127.0.0.1:{port}/a.txt")[0], 200)
            wait_transactions(c.db, 1)

            def agent_switches():
                for task in os.listdir(f"/proc/{server.pid}/task"):
                    with open(f"/proc/{server.pid}/task/{task}/comm") as f:
                        if f.read().strip() != "txray-agent":
                            continue
                    with open(f"/proc/{server.pid}/task/{task}/status") as f:
                        return sum(int(l.split()[1]) for l in f if l.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))
                self.fail("no txray-agent thread")

            time.sleep(1.5)  # the quiet second
            a = agent_switches()
            time.sleep(3)
            woke = agent_switches() - a
            # 3 s of 200 ms waits: ~15 turns (and a few more); with 5 ms turns it was ~600.
            self.assertLess(woke, 90, "the idle agent thread wakes too often")
            self.assertEqual(curl(f"http://127.0.0.1:{port}/a.txt?again=1")[0], 200)
            wait_transactions(c.db, 2)
            stop(server)
