"""Load shedding (issue 13, must-show 3): agents send at least 3x what the store takes; the collector
stores every failed and every slow transaction, counts the fast successful ones it sheds (shed_counts),
and the report's total equals what the load generators sent, less what the agents counted as dropped.

The store is made slow on purpose with the collector's test/debug option --debug-store-delay-us (the
writer sleeps that long per transaction stored: at most 1e6/DELAY tx/s), so that the bound holds on a
loaded 2-core VM without a bigger load. Two load generators (subjects/shed_load.c, C API transactions)
run for SECONDS at RATE tx/s each: one plain, one with head sampling (TXRAY_SAMPLE_RATE=0.5, so the
agent's own counts are merged too). 1 in 97 fails (status 500), 1 in 499 ("GET /slow") sleeps 25 ms
(slow; the collector runs with --keep-slower-than 20).

Checked, with the figures printed (the load offered against the store's ceiling is printed, not asserted):
- the collector shed a good part of what was sent and stored less than half of it;
- every failed and every slow transaction is stored (exactly, when the agents dropped nothing; otherwise
  at most the agents' drops are missing);
- report total (stored + shed + sampled out) + agents' drops + lost in flight == sent, exactly;
- shed_counts holds the collector's and the agent's counts, the collector's status line said SHEDDING
  and the agents' sampled-out total, `txray show --shed` lists them;
- the report's p50 lies in the fast transactions' range (the shed ones counted at their bucket's mean).

TXRAY_SHED_SECONDS (default 12) sets the length; `make soak` runs 60 s. About 25 s with the default."""
import json
import os
import re
import sqlite3
import subprocess

from reltools import subject
from txraytest import TXRAY, Collector, TxrayTestCase, agent_env

SECONDS = float(os.environ.get("TXRAY_SHED_SECONDS", "12"))
RATE = 5000          # per generator
DELAY_US = 500       # the store takes at most 2,000 tx/s
FAIL_EVERY, SLOW_EVERY, SLOW_MS, NAMES = 97, 499, 25, 20


class Shedding(TxrayTestCase):
    def test_overload_keeps_every_failed_and_slow_and_counts_the_rest(self):
        c = Collector(self.tmp, extra_args=["--debug-store-delay-us", str(DELAY_US), "--keep-slower-than", "20"])
        c.start()
        gens = []
        for i, extra in enumerate([{}, {"TXRAY_SAMPLE_RATE": "0.5", "TXRAY_SAMPLE_KEEP_MS": "20"}]):
            env = agent_env(c.endpoint, app="loadgen", extra={"TXRAY_QUEUE": "65536", **extra})
            gens.append(self.spawn([subject("shed_load"), str(SECONDS), str(RATE), str(FAIL_EVERY), str(SLOW_EVERY),
                                    str(SLOW_MS), str(NAMES)], env=env, stdout=subprocess.PIPE, text=True))
        outs = []
        for g in gens:
            out, _ = g.communicate(timeout=SECONDS + 60)
            self.assertEqual(g.returncode, 0)
            outs.append(json.loads(out))
        self.assertEqual(c.stop(), 0)
        log = c.log_text()

        sent = sum(o["sent"] for o in outs)
        failed = sum(o["failed"] for o in outs)
        slow = sum(o["slow"] for o in outs)
        offered = sum(o["sent"] / o["seconds"] for o in outs)
        ceiling = 1e6 / DELAY_US
        con = sqlite3.connect(c.db)
        q = lambda sql: con.execute(sql).fetchone()[0] or 0
        stored = q("SELECT count(*) FROM transactions WHERE app = 'loadgen' AND kind = 'api'")
        stored_failed = q("SELECT count(*) FROM transactions WHERE app = 'loadgen' AND status >= 500 AND error = 'boom'")
        stored_slow = q("SELECT count(*) FROM transactions WHERE app = 'loadgen' AND name = 'GET /slow' "
                        "AND elapsed_ns >= 20000000")
        # Fast ones that were slow anyway (the loaded VM preempted them): slow too, so kept as well.
        stored_slow_other = q("SELECT count(*) FROM transactions WHERE app = 'loadgen' AND name <> 'GET /slow' "
                              "AND elapsed_ns >= 20000000")
        shed_collector = q("SELECT sum(count) FROM shed_counts WHERE app = 'loadgen' AND origin = 'collector'")
        shed_agent = q("SELECT sum(count) FROM shed_counts WHERE app = 'loadgen' AND origin = 'agent'")
        drops = q("SELECT sum(drops_queue_full + drops_send_failed + drops_encode_failed) FROM agents WHERE app = 'loadgen'")
        lost = q("SELECT sum(count) FROM drop_windows WHERE reason = 'lost_in_flight'")
        con.close()
        report = json.loads(subprocess.run([TXRAY, "report", "--db", c.db, "--app", "loadgen", "--format", "json"],
                                           check=True, capture_output=True, text=True).stdout)["summary"]
        print(f"\nsent {sent:,} ({offered:,.0f} tx/s offered, {offered / ceiling:.1f}x the store's ceiling of "
              f"{ceiling:,.0f} tx/s): stored {stored:,}, shed by the collector {shed_collector:,}, sampled out by "
              f"the agent {shed_agent:,}, agents dropped {drops:,}, lost in flight {lost:,}; failed {stored_failed:,}"
              f"/{failed:,} stored, slow {stored_slow:,}/{slow:,} stored (and {stored_slow_other:,} others slower than "
              f"20 ms); report total {report['transactions']:,}, "
              f"p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms, p99 {report['p99_ms']} ms", flush=True)
        for line in [l for l in log.splitlines() if "SHEDDING" in l][:3]:
            print("  " + line)

        # The load is several times what the store takes (5x as set up; printed above, not asserted: the
        # generators' rate is a rate). What decides is what it causes, in counts: the collector shed a
        # good part and stored less than half (below). The store's ceiling is a sleep per transaction, so
        # a loaded machine only lowers it.
        # Every failed and every slow one stored (what the agents dropped is the only possible gap).
        self.assertLessEqual(stored_failed, failed)
        self.assertGreaterEqual(stored_failed, failed - drops - lost)
        self.assertLessEqual(stored_slow, slow)
        self.assertGreaterEqual(stored_slow, slow - drops - lost)
        if drops + lost == 0:
            self.assertEqual((stored_failed, stored_slow), (failed, slow))
        # Nothing unaccounted for: the report's count is exactly sent less the agents' drops.
        self.assertEqual(report["transactions"], stored + shed_collector + shed_agent)
        self.assertEqual(report["transactions"] + drops + lost, sent)
        self.assertEqual(report["shed_transactions"], shed_collector + shed_agent)
        self.assertGreater(shed_collector, sent // 4, "the collector shed a good part of the load")
        self.assertGreater(shed_agent, 0)
        self.assertLess(stored, sent // 2)
        # The status line said so, and reported the agent's sampling.
        self.assertRegex(log, r"SHEDDING \d+ tx/s \(\d+% of those the writer took; \d+% of the fast successful ones\)")
        m = re.findall(r"agents sampled out (\d+)", log)
        self.assertTrue(m)
        self.assertEqual(int(m[-1]), shed_agent)
        # The fast ones dominate: the median is one of them (microseconds), not a slow one: under the
        # collector's own line between fast and slow (--keep-slower-than 20).
        self.assertLess(report["p50_ms"], 20)
        self.assertGreaterEqual(report["max_ms"], SLOW_MS)
        text = subprocess.run([TXRAY, "show", "--db", c.db, "--shed"], check=True, capture_output=True, text=True).stdout
        self.assertIn("SHED  ", text)
        self.assertIn("GET /item/", text)
