"""The orders sample, bare: every channel returns what the database holds; errors are clean; the driver
prints the comparison; --no-pool answers the same."""
import os
import socket
import sqlite3
import statistics
import struct
import subprocess
import unittest

from sampletools import BIN, Server, http_post, orders_bench, orders_call, orders_db

CHANNELS = ["tcp-binary", "http-binary", "http-json", "http-xml"]
# CPU per call on the one-integer call, across transports: how far apart the channels may be (see
# test_channel_order); 0.05 on a quiet machine.
CPU_MARGIN = float(os.environ.get("TXRAY_ORDERS_CPU_MARGIN", "0.2"))


def start_orders(*extra):
    return Server([os.path.join(BIN, "txray-orders"), "--db", orders_db(), *extra], channels=("tcp", "http"))


def expected_customers(after, n):
    con = sqlite3.connect(f"file:{orders_db()}?mode=ro", uri=True)
    try:
        return [list(r) for r in con.execute(
            "SELECT id, name, company, email, phone, address, city, country, balance_cents FROM customers "
            "WHERE id > ? ORDER BY id LIMIT ?", (after, n))]
    finally:
        con.close()


def expected_status(order_id):
    con = sqlite3.connect(f"file:{orders_db()}?mode=ro", uri=True)
    try:
        return con.execute("SELECT status FROM orders WHERE id = ?", (order_id,)).fetchone()[0]
    finally:
        con.close()


class OrdersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = start_orders()
        cls.ep = dict(tcp=cls.server.addr("tcp"), http=cls.server.addr("http"))

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_database(self):
        con = sqlite3.connect(f"file:{orders_db()}?mode=ro", uri=True)
        try:
            self.assertEqual(con.execute("SELECT count(*) FROM customers").fetchone()[0], 100000)
            self.assertEqual(con.execute("SELECT count(*) FROM orders").fetchone()[0], 300000)
            # Pinned values of the deterministic generator (shared with samples/py_orders/orders_data.py).
            self.assertEqual(con.execute("SELECT name, email, city, country FROM customers WHERE id=11").fetchone(),
                             ("Linda Lee", "linda.lee11@example.com", "Warsaw", "Poland"))
        finally:
            con.close()

    def test_every_channel_returns_the_database_rows(self):
        for ch in CHANNELS:
            with self.subTest(channel=ch):
                for order_id in (1, 77, 123456, 300000):
                    r = orders_call(ch, "GetOrderStatus", order_id, **self.ep)
                    self.assertEqual(r["code"], 0)
                    self.assertEqual(r["status"], expected_status(order_id))
                for after, n in ((0, 20), (4242, 50), (99990, 20)):
                    r = orders_call(ch, "GetCustomers", after, n, **self.ep)
                    self.assertEqual(r["code"], 0)
                    self.assertEqual(r["customers"], expected_customers(after, n))

    def test_errors_on_every_channel(self):
        for ch in CHANNELS:
            with self.subTest(channel=ch):
                r = orders_call(ch, "GetOrderStatus", 999999999, **self.ep)
                self.assertEqual(r["code"], 1)  # NotFound
                self.assertIn("no order 999999999", r["error"])
                r = orders_call(ch, "GetCustomers", 1, 5000, **self.ep)
                self.assertEqual(r["code"], 2)  # BadRequest
                self.assertIn("n must be", r["error"])

    def test_malformed_requests(self):
        port = self.server.ports["http"]
        status, _, body = http_post(port, "/json/GetOrderStatus", b"{not json", {"Content-Type": "application/json"})
        self.assertEqual(status, 400)
        self.assertIn(b"JSON", body)
        status, _, body = http_post(port, "/soap/GetCustomers", b"<a><b></a>", {"Content-Type": "text/xml"})
        self.assertEqual(status, 400)
        self.assertIn(b"Fault", body)
        self.assertIn(b"mismatched end tag", body)
        self.assertEqual(http_post(port, "/json/DropTables", b"{}")[0], 404)
        # Raw TCP: a frame with an unknown method gets a BadRequest answer; a silly length drops the link.
        with socket.create_connection(("127.0.0.1", self.server.ports["tcp"]), timeout=10) as s:
            s.sendall(struct.pack("<IB", 1, 9))
            (length,) = struct.unpack("<I", s.recv(4, socket.MSG_WAITALL))
            frame = s.recv(length, socket.MSG_WAITALL)
            self.assertEqual(frame[0], 2)  # BadRequest
            self.assertIn(b"unknown method 9", frame)
            s.sendall(struct.pack("<I", 0xFFFFFFFF))
            self.assertEqual(s.recv(100, socket.MSG_WAITALL), b"")

    def test_no_pool_answers_the_same(self):
        with start_orders("--no-pool") as np:
            ep = dict(tcp=np.addr("tcp"), http=np.addr("http"))
            for ch in CHANNELS:
                self.assertEqual(orders_call(ch, "GetCustomers", 500, 20, **ep)["customers"], expected_customers(500, 20))
                self.assertEqual(orders_call(ch, "GetOrderStatus", 4321, **ep)["status"], expected_status(4321))

    def test_bad_arguments(self):
        bench = os.path.join(BIN, "txray-orders-bench")
        for args, message in (([bench, "--http", self.ep["http"], "--channels", "carrier-pigeon"], "unknown channel"),
                              ([bench, "--http", self.ep["http"], "--channels", "tcp-binary"], "needs --tcp"),
                              ([bench, "--http", self.ep["http"], "--channels", "http-json", "--methods", "GetCustomers5000"], "out of range"),
                              ([os.path.join(BIN, "txray-orders"), "--db", orders_db(), "--tcp", "localhost:x"], "bad host:port"),
                              ([os.path.join(BIN, "txray-orders"), "--db", "/nonexistent/dir/o.db"], "cannot create")):
            r = subprocess.run(args, capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(message, r.stderr, args)

    def test_driver_table(self):
        out = subprocess.run([os.path.join(BIN, "txray-orders-bench"), "--tcp", self.ep["tcp"], "--http",
                              self.ep["http"], "--seconds", "0.1", "--rounds", "1", "--clients", "2"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        for label in ("GetOrderStatus", "GetCustomers(20)", "GetCustomers(50)", *CHANNELS, "calls/s", "p95 ms"):
            self.assertIn(label, out.stdout)
        rows = orders_bench(seconds=0.1, rounds=1, clients=2, **self.ep)
        self.assertEqual(len(rows), 12)
        for key, row in rows.items():
            self.assertEqual(row["errors"], 0, key)
            self.assertGreater(row["calls"], 0, key)
        # Bytes per call follow the encodings: binary < JSON < XML.
        for m, n in (("GetOrderStatus", 0), ("GetCustomers", 20), ("GetCustomers", 50)):
            b = {ch: rows[(ch, m, n)]["resp_bytes"] for ch in CHANNELS}
            self.assertLess(b["tcp-binary"], b["http-binary"])
            self.assertLess(b["http-json"], b["http-xml"])
        self.assertGreater(rows[("http-xml", "GetCustomers", 50)]["resp_bytes"],
                           2 * rows[("http-json", "GetCustomers", 50)]["resp_bytes"])

    def test_channel_order(self):
        """The reference's finding: raw TCP with binary is the fastest channel, XML over HTTP the slowest.

        Throughput on a shared 2-core machine moves with the neighbours' load, so: many short turns per cell
        in rotation (calls/s = median over turns). Where there is data to encode (GetCustomers) the channels
        are 2-4x apart and calls/s is checked. On the one-integer call they differ by a few microseconds of
        parsing in ~30 us of system calls and scheduling, which a busy neighbour can swamp: there the
        order is checked on CPU per call (driver + server, read in ns from both processes' CPU clocks),
        which is what sets throughput on a machine of one's own and which load moves much less.

        CPU per call is compared turn by turn: the two cells of one turn ran a fraction of a second apart,
        under the same neighbours, and the median over the 15 turns of their ratio is what is checked, so a
        turn in which the machine was busier (which moved the whole-run means by 5-10% and swapped XML and
        raw TCP on GetOrderStatus under `yes` x 2: 103.9 vs 104.2 us) cannot decide alone.
        """
        rows = orders_bench(seconds=0.05, rounds=15, clients=4, server_pid=self.server.proc.pid, **self.ep)
        for m, n in (("GetOrderStatus", 0), ("GetCustomers", 20), ("GetCustomers", 50)):
            rate = {ch: rows[(ch, m, n)]["calls_per_s"] for ch in CHANNELS}
            turns = {ch: rows[(ch, m, n)]["round_cpu_us"] for ch in CHANNELS}

            def cpu_ratio(a, b):
                """Median over turns of CPU per call of channel a / channel b in the same turn."""
                return statistics.median(x / y for x, y in zip(turns[a], turns[b]) if x > 0 and y > 0)

            ratios = {f"{a}/{b}": round(cpu_ratio(a, b), 3) for a, b in
                      (("http-xml", "tcp-binary"), ("tcp-binary", "http-json"), ("http-xml", "http-binary"),
                       ("http-xml", "http-json"))}
            with self.subTest(method=m, n=n, rates=rate, cpu_ratios=ratios):
                if m == "GetOrderStatus":
                    # A few microseconds of parsing apart out of ~30 us of system calls and wake-ups. On a
                    # machine of one's own: raw TCP + binary no dearer than JSON or XML, within 5%
                    # (TXRAY_ORDERS_CPU_MARGIN=0.05). On a loaded 2-core machine the wake-ups grow to
                    # ~100-180 us a call and the two transports pay them differently: the median of the
                    # same-turn ratios reached TCP/JSON 1.134 and XML/TCP 0.854 under `yes` x 2 at load
                    # average 10, so `make test` allows 20% across transports. Over one transport (HTTP)
                    # the encodings alone differ: XML no cheaper than binary, within 5% (1.00-1.20 seen).
                    margin = CPU_MARGIN
                    self.assertLessEqual(cpu_ratio("tcp-binary", "http-json"), 1 + margin)
                    self.assertGreaterEqual(cpu_ratio("http-xml", "tcp-binary"), 1 - margin)
                    self.assertGreaterEqual(cpu_ratio("http-xml", "http-binary"), 0.95)
                else:
                    # Data to encode: CPU per call in the reference's order, strictly.
                    self.assertGreater(cpu_ratio("http-xml", "tcp-binary"), 1.0)
                    self.assertLess(cpu_ratio("tcp-binary", "http-json"), 1.0)
                    for ch in ("http-binary", "http-json"):
                        self.assertGreater(cpu_ratio("http-xml", ch), 1.0)
                    # Throughput: TCP + binary ahead of JSON and XML, XML behind the binary channels.
                    # JSON and XML are close in calls/s (XML's larger bodies against JSON's parser) and a
                    # busy neighbour swapped them in one CI run (2,961 vs 3,041/s): their order is
                    # checked on CPU per call above, which load moves much less.
                    self.assertGreater(rate["tcp-binary"], rate["http-json"])
                    for ch in ("tcp-binary", "http-binary"):
                        self.assertLess(rate["http-xml"], rate[ch])
                    # The same binary body over HTTP (a channel the samples add to separate transport from
                    # encoding) costs about the same as raw TCP here: not asserted either way.


if __name__ == "__main__":
    unittest.main()
