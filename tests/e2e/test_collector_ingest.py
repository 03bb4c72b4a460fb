"""`txray collect` end to end: a real collector receives batches from txray-test-sender over ZeroMQ and
`txray show --json` returns them; SIGINT stores everything received; bad messages are counted, never fatal."""
import os
import re
import signal
import socket
import sqlite3
import subprocess

from txraytest import (TXRAY, Collector, TxrayTestCase, check_sums, count_transactions, free_port,
                       send_batches, show_json, wait_for, wait_transactions)


def final_status(collector):
    lines = [l for l in collector.log_text().splitlines() if "exit:" in l]
    assert lines, collector.log_text()
    line = lines[-1]
    nums = {k: int(v) for k, v in re.findall(r"(malformed|invalid|oversize|lost|agents dropped) (\d+)", line)}
    nums["stored"] = int(re.search(r"(\d+) stored in total", line).group(1))
    return nums


def received_total(collector):
    """Transactions the collector has received so far, from its latest status line (0 before the first)."""
    found = re.findall(r"stored in total \((\d+) received\)", collector.log_text())
    return int(found[-1]) if found else 0


class CollectorIngest(TxrayTestCase):
    def test_batches_round_trip_to_show_json(self):
        with Collector(self.tmp) as c:
            sent = send_batches(c.endpoint, "--transactions", 300, "--per-batch", 40, "--steps", 10,
                                "--app", "shop", "--print-txids")
            wait_transactions(c.db, 300)
        txs = show_json(c.db, "--last", "1000")
        self.assertEqual(sorted(t["txid"] for t in txs), sorted(sent["txids"]))
        for t in txs:
            check_sums(self, t)
            self.assertEqual(t["app"], "shop")
            self.assertEqual(t["host"], "testhost")
            self.assertEqual(len(t["steps"]), 10)
            self.assertRegex(t["guid"], r"^[0-9a-f]{32}$")
            self.assertTrue(t["name"].startswith("GET /orders/"))
            kinds = {s["kind"] for s in t["steps"]}
            self.assertTrue({"START", "END", "SOCKET", "SOCKET_CLOSE", "SQL", "HTTP_CALL"} <= kinds, kinds)
            sql = [s for s in t["steps"] if s["kind"] == "SQL"]
            self.assertEqual(sum(s["elapsed_ns"] for s in sql), t["sql_ns"])
            self.assertTrue(all("rows" in s and "fingerprint" in s for s in sql))
            socket = next(s for s in t["steps"] if s["kind"] == "SOCKET")
            self.assertEqual(socket["attributes"]["port"], "5432")
        # --id finds one of them; --app filters.
        one = show_json(c.db, "--id", sent["txids"][17])
        self.assertEqual([t["txid"] for t in one], [sent["txids"][17]])
        self.assertEqual(show_json(c.db, "--last", "5", "--app", "nope"), [])

    def test_sigint_stores_everything_received(self):
        c = Collector(self.tmp).start()
        send_batches(c.endpoint, "--transactions", 20000, "--per-batch", 100, "--steps", 10)
        # The sender has handed every message to its kernel (linger waits no longer). Once the collector
        # says it received them all (its once-a-second status line), stop at once: everything received
        # must be stored, however far behind the writer is. (Stopping before that leaves what is still
        # in the connection's kernel buffers lost in flight, by design: docs/reliability.md.)
        wait_for(lambda: received_total(c) >= 20000, 60, what="the collector to receive all 20,000")
        rc = c.stop()
        self.assertEqual(rc, 0)
        # The last checkpoint (TRUNCATE) leaves everything in the database file proper.
        if os.path.exists(c.db + "-wal"):
            self.assertEqual(os.path.getsize(c.db + "-wal"), 0)
        self.assertEqual(count_transactions(c.db), 20000)
        self.assertEqual(final_status(c)["stored"], 20000)
        with sqlite3.connect(c.db) as con:
            self.assertEqual(con.execute("SELECT count(*) FROM steps").fetchone()[0], 200000)

    def test_sigterm_stores_everything_received_too(self):
        c = Collector(self.tmp).start()
        send_batches(c.endpoint, "--transactions", 5000, "--per-batch", 50)
        c.proc.send_signal(signal.SIGTERM)
        self.assertEqual(c.stop(), 0)
        self.assertEqual(count_transactions(c.db), 5000)

    def test_bad_messages_are_counted_and_survived(self):
        with Collector(self.tmp, extra_args=["--max-message-mib", "1"]) as c:
            send_batches(c.endpoint, "--garbage", 200, "--invalid", 7, "--oversize", 3,
                         "--oversize-bytes", 1500000, "--transactions", 50, "--per-batch", 10)
            wait_transactions(c.db, 50)
            self.assertTrue(c.running(), c.log_text())
            # Still serving: a second sender's batches arrive too.
            send_batches(c.endpoint, "--transactions", 20, "--seed", 2, "--instance-id", 77)
            wait_transactions(c.db, 70)
            self.assertTrue(c.running())
        st = final_status(c)
        self.assertEqual(st["oversize"], 3)
        # Random bytes that happen to parse as a Batch lack an agent: they count as invalid, not malformed.
        self.assertEqual(st["malformed"] + st["invalid"], 200 + 7)
        self.assertGreaterEqual(st["malformed"], 150)
        self.assertEqual(st["stored"], 70)
        self.assertEqual(count_transactions(c.db), 70)

    def test_a_locked_database_loses_only_what_could_not_be_written(self):
        with Collector(self.tmp) as c:
            send_batches(c.endpoint, "--transactions", 5, "--seed", 1)
            wait_transactions(c.db, 5)
            # Another program holds the write lock longer than the collector's busy timeout (5 s).
            blocker = sqlite3.connect(c.db, timeout=1, isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")
            try:
                send_batches(c.endpoint, "--transactions", 10, "--per-batch", 10, "--seed", 2)
                wait_for(lambda: "could not store 10 transactions" in c.log_text(), timeout=40,
                         what="the collector to give up on the locked batch")
            finally:
                blocker.rollback()
                blocker.close()
            self.assertTrue(c.running())
            send_batches(c.endpoint, "--transactions", 7, "--seed", 3)
            wait_transactions(c.db, 12)
        st = final_status(c)
        self.assertEqual(st["lost"], 10)
        self.assertEqual(st["stored"], 12)
        self.assertEqual(count_transactions(c.db), 12)

    def test_tcp_endpoint_and_agent_drop_counters(self):
        port = free_port()
        with Collector(self.tmp, endpoint=f"tcp://127.0.0.1:{port}") as c:
            # A peer that is not ZeroMQ at all: libzmq drops the connection, the collector carries on.
            for payload in (os.urandom(5000), b"\xff" + b"\x00" * 8 + b"\x7f" + os.urandom(100), b"GET / HTTP/1.1\r\n\r\n"):
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(payload)
            send_batches(c.endpoint, "--transactions", 100, "--per-batch", 10, "--drops", 40)
            wait_transactions(c.db, 100)
            self.assertTrue(c.running())
        self.assertEqual(final_status(c)["agents dropped"], 40 + 20)
        with sqlite3.connect(c.db) as con:
            row = con.execute("SELECT drops_queue_full, drops_send_failed, batches FROM agents").fetchall()
        self.assertEqual(row, [(40, 20, 10)])

    def test_bad_arguments_exit_2(self):
        def run(*args):
            return subprocess.run([TXRAY, "collect", *args], capture_output=True, text=True, timeout=30)
        # (No --listen, no --db: the defaults, tcp://127.0.0.1:7878 and ./txray.db: test_security.py.)
        self.assertEqual(run("--db", os.path.join(self.tmp, "x.db"), "--status-interval", "-1").returncode, 2)
        r = run("--listen", "bogus://nowhere", "--db", os.path.join(self.tmp, "x.db"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot listen", r.stderr)
        foreign = os.path.join(self.tmp, "foreign.db")
        with sqlite3.connect(foreign) as con:
            con.execute("CREATE TABLE people(name TEXT)")
        r = run("--listen", f"ipc://{self.tmp}/s", "--db", foreign)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a txray store", r.stderr)
        self.assertEqual(run("--help").returncode, 0)
