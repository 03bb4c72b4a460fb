"""`txray report --baseline-*` on the orders sample under the agent (issue 15): raw TCP + binary against
SOAP over HTTP, and the pooled service against the unpooled one (--no-pool). The comparison must say
where the difference comes from: serialization is CPU in own code; a SQLite database opened per request
shows as its DB_CONNECT rows plus the re-preparing around them (see below). Bounded: about 2 s of traffic per
server, ~15 s in all."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "samples"))

from sampletools import BIN, Server, orders_bench, orders_db  # noqa: E402
from txraytest import TXRAY, Collector, TxrayTestCase, agent_env, wait_transactions  # noqa: E402
from pgserver import PgServer  # noqa: E402


def compare(db, *args):
    p = subprocess.run([TXRAY, "report", "--db", db, "--format", "json", *args], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"txray report failed: {p.stderr}")
    c = json.loads(p.stdout)["compare"]
    total = sum(x["contribution_ms"] for x in c["parts"])
    return c, total


def describe(c):
    return json.dumps({"difference_ms": c["difference_ms"], "by_part": c["by_part"],
                       "parts": [{k: x[k] for k in ("part", "key", "contribution_ms")} for x in c["parts"][:6]]},
                      indent=1)


class OrdersCompareTest(TxrayTestCase):
    def run_server(self, c, app, *extra, channels=None, methods=("GetCustomers50",), seconds=0.4):
        server = Server([os.path.join(BIN, "txray-orders"), "--db", orders_db(), *extra], channels=("tcp", "http"),
                        env=agent_env(c.endpoint, app=app))
        try:
            rows = orders_bench(tcp=server.addr("tcp"), http=server.addr("http"), channels=channels,
                                methods=list(methods), clients=1, seconds=seconds, rounds=2)
        finally:
            self.assertEqual(server.stop(), 0)
        for key, row in rows.items():
            self.assertEqual(row["errors"], 0, key)
        return sum(r["calls"] for r in rows.values())

    def test_channels_and_pooling(self):
        with Collector(self.tmp) as c:
            n = self.run_server(c, "orders", channels=["tcp-binary", "http-xml"])
            n += self.run_server(c, "orders-pooled", channels=["http-binary"], methods=("GetOrderStatus",))
            n += self.run_server(c, "orders-nopool", "--no-pool", channels=["http-binary"], methods=("GetOrderStatus",))
            wait_transactions(c.db, n)

        # SOAP (current) against raw TCP + binary (baseline): the XML serialization is CPU in own code.
        cmp, total = compare(c.db, "--app", "orders", "--name", "POST /soap/GetCustomers",
                             "--baseline-name", "TCP GetCustomers")
        self.assertGreater(cmp["baseline"]["transactions"], 10)
        self.assertGreater(cmp["current"]["transactions"], 10)
        self.assertAlmostEqual(total, cmp["difference_ms"], places=6)
        self.assertGreater(cmp["difference_ms"], 0, describe(cmp))
        # The top part that is work: CPU in own code, ahead of SQL, fetch and calls together. Waiting is not
        # ranked here: on this shared 2-core VM (load 10+ from parallel builds) it holds the time the
        # service's thread was runnable but not running, which grows with the CPU work itself and came
        # first in some runs; on a quiet machine CPU leads the whole list (docs/report.md).
        # (With CPU samples on, the default, a transaction that got samples splits its own-code CPU by hot
        # function, so the top member is "own code" or one of the serializer's functions.)
        work = [p for p in cmp["parts"] if p["part"] != "waiting"]
        self.assertEqual(work[0]["part"], "cpu", describe(cmp))
        by_part = {p["part"]: p["contribution_ms"] for p in cmp["by_part"]}
        self.assertGreater(by_part["cpu"], by_part["sql"] + by_part["fetch"] + by_part["call"], describe(cmp))

        # Unpooled (current) against pooled (baseline): the service opens the SQLite database, prepares
        # its two statements, runs one and closes it on every request. sqlite3_open_v2 and the schema read
        # of the connection's first prepare are DB_CONNECT rows (a few µs each here: SQLite's connection is
        # a file open, not a network handshake), so the comparison names them; most of the difference is
        # the rest of that work (the second prepare, finalize, close) in the service's own thread, CPU in
        # own code. The difference is a fraction of a millisecond on a ~0.3 ms call, so on a loaded
        # machine its sign in wall time is not asserted; the CPU it costs is.
        cmp, total = compare(c.db, "--app", "orders-nopool", "--baseline-app", "orders-pooled")
        self.assertAlmostEqual(total, cmp["difference_ms"], places=6)
        by_part = {p["part"]: p["contribution_ms"] for p in cmp["by_part"]}
        self.assertGreater(by_part["cpu"], 0, describe(cmp))
        self.assertTrue(any(p["part"] == "cpu" and p["contribution_ms"] > 0 for p in cmp["parts"][:2]), describe(cmp))
        connect = [p for p in cmp["parts"] if p["part"] == "waiting" and p["key"] == "DB_CONNECT"]
        self.assertEqual(len(connect), 1, describe(cmp))
        self.assertGreater(connect[0]["contribution_ms"], 0, describe(cmp))
        # the pooled service connects once per serving thread, the unpooled one on every request: counted
        # per transaction (a SQLite connect is a file open of a few µs, so its mean time per transaction
        # is not a steady sign on a loaded machine: CI saw 0.0155 pooled vs 0.0216 ms unpooled once)
        self.assertLess(connect[0]["baseline_per_tx"] * 5, connect[0]["current_per_tx"], describe(cmp))
        self.assertGreaterEqual(connect[0]["current_per_tx"], 1, describe(cmp))
        self.assertEqual((cmp["appeared"]["sql"], cmp["appeared"]["calls"]), ([], []))  # the same statements

    def test_pooling_on_postgresql(self):
        """The reference case's pool finding: the service on a real PostgreSQL server, one connection per
        serving thread (pooled) against a new connection per request (--no-pool). Each new connection is a
        TCP connect, the startup packet, authentication and a backend process the server forks: the
        DB_CONNECT rows. The comparison must put the connection steps first and give them most of the
        difference in means."""
        with PgServer() as pg, Collector(self.tmp) as c:
            dsn = f"host=127.0.0.1 port={pg.port} user={pg.user} dbname={pg.database}"
            n = self.run_server(c, "orders-pg-pooled", "--pg", dsn, channels=["http-binary"],
                                methods=("GetOrderStatus",), seconds=0.5)
            n += self.run_server(c, "orders-pg-nopool", "--pg", dsn, "--no-pool", channels=["http-binary"],
                                 methods=("GetOrderStatus",), seconds=0.5)
            wait_transactions(c.db, n)

        cmp, total = compare(c.db, "--app", "orders-pg-nopool", "--baseline-app", "orders-pg-pooled")
        self.assertGreater(cmp["baseline"]["transactions"], 10, describe(cmp))
        self.assertGreater(cmp["current"]["transactions"], 10, describe(cmp))
        self.assertAlmostEqual(total, cmp["difference_ms"], places=6)
        self.assertGreater(cmp["difference_ms"], 0, describe(cmp))
        print(describe(cmp)) if os.environ.get("TXRAY_TEST_VERBOSE") else None
        top = cmp["parts"][0]
        self.assertEqual((top["part"], top["key"]), ("waiting", "DB_CONNECT"), describe(cmp))
        self.assertGreater(top["contribution_ms"], 0.5 * cmp["difference_ms"], describe(cmp))
        # pooled: one connection per serving thread; unpooled: one per request
        self.assertLess(top["baseline_ms"] * 5, top["current_ms"], describe(cmp))
        self.assertEqual((cmp["appeared"]["sql"], cmp["appeared"]["calls"]), ([], []))  # the same statements


if __name__ == "__main__":
    import unittest
    unittest.main()
