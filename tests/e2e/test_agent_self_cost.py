"""The agent's own cost (issue 14): every transaction of a real server under the agent carries an estimate
of what the agent spent in it — present, positive, plausible (orders of magnitude only: this machine is
shared) — the agent's calibrated unit costs are stored once per instance, and `txray show` prints
AGENT COST in the header and agent_cost_ns in --json. A transaction with more rows costs more."""
import re
import shutil
import sqlite3

from agenttools import curl, start_backend, start_burner, stop
from txraytest import Collector, TxrayTestCase, show_json, show_text, wait_transactions


class AgentSelfCost(TxrayTestCase):
    def test_estimate_present_positive_and_plausible(self):
        backend = start_backend(self, 1000)
        with Collector(self.tmp) as c:
            server, port = start_burner(self, c.endpoint, backend, burn_ms=1, app="selfcost")
            for _ in range(5):
                self.assertEqual(curl(f"http://127.0.0.1:{port}/w")[0], 200)
            wait_transactions(c.db, 5)
            stop(server)
        txs = [t for t in show_json(c.db, "--last", "100") if t["name"] == "GET /w"]
        self.assertEqual(len(txs), 5)
        for t in txs:
            cost = t["agent_cost_ns"]
            self.assertIsNotNone(cost, t)
            # A request with a connect, a close and two clock reads per row: above 100 ns (several
            # system-call clock reads), far below 1 ms.
            self.assertGreater(cost, 100, t)
            self.assertLess(cost, 1_000_000, t)
            self.assertLess(cost, t["elapsed_ns"], t)
            self.assertGreaterEqual(t["agent_thread_ns"], 0)
            self.assertLessEqual(t["agent_thread_ns"], cost)

        con = sqlite3.connect(f"file:{c.db}?mode=ro", uri=True)
        units = con.execute("SELECT tx_ps, row_ps, io_ps, syscall_ps, encode_tx_ps, cpu_clock_ps, calibration_ns"
                            " FROM agent_cost_units").fetchall()
        con.close()
        self.assertEqual(len(units), 1, units)  # one agent instance
        tx_ps, row_ps, io_ps, syscall_ps, encode_tx_ps, clock_ps, calib_ns = units[0]
        for v in (tx_ps, row_ps, io_ps, syscall_ps, encode_tx_ps, clock_ps):
            self.assertGreater(v, 0, units)
        # A row reads the thread CPU clock, so it costs at least about one read; a followed read/write
        # (no clock, no system call) costs less than a row.
        self.assertGreater(row_ps, 0.5 * clock_ps, units)
        self.assertLess(io_ps, row_ps, units)
        self.assertLess(calib_ns, 200_000_000, units)  # bounded: a few ms, 200 ms with a wide margin

        # More rows (START, SOCKET, SOCKET_CLOSE, END) cost more than the START/END-only base.
        self.assertGreater(min(t["agent_cost_ns"] for t in txs), tx_ps / 1000)

        text = show_text(c.db, "--id", txs[0]["txid"])
        m = re.search(r"^AGENT COST\s*: ([0-9.,]+) (ns|µs|ms) \((<?[0-9.]+)%\)$", text, re.M)
        self.assertIsNotNone(m, text)

        # A store from before the tables: shown without the line, null in --json.
        old = self.tmp + "/old.db"
        shutil.copy(c.db, old)
        con = sqlite3.connect(old)
        con.execute("DROP TABLE agent_cost")
        con.execute("DROP TABLE agent_cost_units")
        con.commit()
        con.close()
        self.assertNotIn("AGENT COST", show_text(old, "--id", txs[0]["txid"]))
        self.assertIsNone(show_json(old, "--id", txs[0]["txid"])[0]["agent_cost_ns"])
