"""The channel comparison under the agent (issue 7, finding 3): the order service traced with no change,
every call a transaction with its SQL step, and the store (and `txray report`) showing the channels'
difference in bytes (and CPU, printed). Also the Python service, traced with no code change."""
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "samples"))

from sampletools import BIN, PY_ORDERS, PYTHON, Server, orders_bench, orders_call, orders_db  # noqa: E402
from txraytest import TXRAY, Collector, TxrayTestCase, agent_env, check_sums, show_json, wait_transactions  # noqa: E402

STATUS_SQL = "SELECT status FROM orders WHERE id = ?"


def per_name(db):
    """Per transaction name: count, median CPU (a mean moves with one descheduled or sampled call on a loaded
    machine), mean bytes (exact, the same every call) and the fewest statements."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = {name: dict(count=n, written=w, read=r, sql=sq) for name, n, w, r, sq in con.execute(
            "SELECT name, count(*), avg(bytes_written), avg(bytes_read), min(sql_count) "
            "FROM transactions WHERE kind IS NOT 'unattributed' GROUP BY name")}
        for name, agg in out.items():
            agg["cpu"] = statistics.median(c for (c,) in con.execute(
                "SELECT cpu_ns FROM transactions WHERE name = ? AND kind IS NOT 'unattributed'", (name,)))
        return out
    finally:
        con.close()


def some_txids(db, name, k=3):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return ["%016x" % (t & (2**64 - 1)) for (t,) in
                con.execute("SELECT txid FROM transactions WHERE name = ? ORDER BY id DESC LIMIT ?", (name, k))]
    finally:
        con.close()


class OrdersUnderAgentTest(TxrayTestCase):
    def test_channels_traced_and_attributed(self):
        db_file = orders_db()
        with Collector(self.tmp) as c:
            server = Server([os.path.join(BIN, "txray-orders"), "--db", db_file], channels=("tcp", "http"),
                            env=agent_env(c.endpoint, app="orders"))
            try:
                ep = dict(tcp=server.addr("tcp"), http=server.addr("http"))
                # Answers are the same as without the agent.
                for ch in ("tcp-binary", "http-binary", "http-json", "http-xml"):
                    r = orders_call(ch, "GetCustomers", 1000, 20, **ep)
                    self.assertEqual([row[0] for row in r["customers"]], list(range(1001, 1021)))
                rows = orders_bench(methods=["GetOrderStatus", "GetCustomers50"], clients=2, seconds=0.2, rounds=2, **ep)
            finally:
                self.assertEqual(server.stop(), 0)
            calls = sum(r["calls"] for r in rows.values())
            wait_transactions(c.db, calls)
        for key, row in rows.items():
            self.assertEqual(row["errors"], 0, key)

        names = per_name(c.db)
        for method in ("GetOrderStatus", "GetCustomers"):
            for name in (f"TCP {method}", f"POST /bin/{method}", f"POST /json/{method}", f"POST /soap/{method}"):
                self.assertIn(name, names)
                self.assertEqual(names[name]["sql"], 1, f"every {name} runs one statement")

        # A profile of each channel: START, the SQL step with its masked text, END; the sums hold.
        for name, sql_start in (("TCP GetOrderStatus", STATUS_SQL), ("POST /soap/GetCustomers", "SELECT id, name")):
            for txid in some_txids(c.db, name):
                tx = show_json(c.db, "--id", txid)[0]
                check_sums(self, tx)
                sql = [s for s in tx["steps"] if s["kind"] == "SQL"]
                self.assertEqual(len(sql), 1, tx["steps"])
                self.assertTrue(sql[0]["text"].startswith(sql_start), sql[0]["text"])
                if name.endswith("GetCustomers"):
                    self.assertEqual(sql[0]["rows"], 50)

        # Why the channels differ: bytes on the wire grow with the encoding (exact: the same every call).
        gc = {ch: names[f"POST /{ch}/GetCustomers"] for ch in ("bin", "json", "soap")}
        self.assertLess(gc["bin"]["written"], gc["json"]["written"])
        self.assertLess(2 * gc["json"]["written"], gc["soap"]["written"])
        self.assertLess(names["POST /json/GetOrderStatus"]["read"], names["POST /soap/GetOrderStatus"]["read"])
        # And CPU per call, text encodings 2-3x binary here: the agent's CPU_T medians are printed, not
        # asserted (CPU time moves with a loaded machine's neighbours); the order they show is decided on
        # the server's instructions per call in samples.test_orders, and timed in bench/orders_channels.
        print("\nmedian CPU_T per call under the agent (not asserted): "
              + ", ".join(f"{name} {names[name]['cpu'] / 1e3:.1f} us" for name in
                          ("TCP GetCustomers", "POST /bin/GetCustomers", "POST /json/GetCustomers",
                           "POST /soap/GetCustomers")), flush=True)
        for name in ("TCP GetCustomers", "POST /bin/GetCustomers", "POST /json/GetCustomers", "POST /soap/GetCustomers"):
            self.assertGreater(names[name]["cpu"], 0, name)

        # `txray report` ranks the same names with the same counts.
        out = subprocess.run([TXRAY, "report", "--db", c.db, "--format", "json", "--top", "50"], check=True,
                             capture_output=True, text=True).stdout
        report = {(n["app"], n["name"]): n for n in json.loads(out)["names"]}
        for name, agg in names.items():
            self.assertEqual(report[("orders", name)]["count"], agg["count"], name)

    def test_python_service_traced_without_change(self):
        db_file = orders_db()
        Server([os.path.join(BIN, "txray-orders"), "--db", db_file], channels=("tcp", "http")).stop()  # ensure the db
        with Collector(self.tmp) as c:
            py = Server([PYTHON, PY_ORDERS, "--db", db_file], env=agent_env(c.endpoint, app="py-orders"))
            try:
                bare = Server([PYTHON, PY_ORDERS, "--db", db_file])
                try:
                    for ch in ("http-json", "http-xml"):
                        traced = orders_call(ch, "GetCustomers", 4000, 50, http=py.addr())
                        plain = orders_call(ch, "GetCustomers", 4000, 50, http=bare.addr())
                        self.assertEqual(traced["customers"], plain["customers"])
                        self.assertEqual(len(traced["customers"]), 50)
                        self.assertEqual(orders_call(ch, "GetOrderStatus", 123, http=py.addr())["status"],
                                         orders_call(ch, "GetOrderStatus", 123, http=bare.addr())["status"])
                        self.assertEqual(orders_call(ch, "GetOrderStatus", 0, http=py.addr())["code"], 1)
                finally:
                    bare.stop()
            finally:
                self.assertEqual(py.stop(), 0)
            wait_transactions(c.db, 6)
        txs = show_json(c.db, "--app", "py-orders", "--last", "6")
        by_name = {}
        for tx in txs:
            check_sums(self, tx)
            by_name.setdefault(tx["name"], []).append(tx)
        self.assertEqual(set(by_name), {"POST /json/GetCustomers", "POST /json/GetOrderStatus",
                                        "POST /soap/GetCustomers", "POST /soap/GetOrderStatus"})
        for name in ("POST /json/GetCustomers", "POST /soap/GetCustomers"):
            sql = [s for s in by_name[name][0]["steps"] if s["kind"] == "SQL"]
            self.assertEqual(len(sql), 1)
            self.assertEqual(sql[0]["rows"], 50)
            self.assertIn("FROM customers WHERE id > ?", sql[0]["text"])
        statuses = sorted(tx["status"] for tx in by_name["POST /json/GetOrderStatus"])
        self.assertEqual(statuses, [200, 404])


if __name__ == "__main__":
    unittest.main()
