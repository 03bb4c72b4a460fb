"""The explicit C API (agent/include/txray/txray.h) from a C program: a no-op without the agent, real
transactions and MESSAGE rows with it."""
import os
import subprocess

from txraytest import BIN, Collector, TxrayTestCase, agent_env, bare_env, check_sums, show_json, \
    wait_transactions

PROBE = os.path.join(BIN, "txray-c-api-probe")


class AgentCApi(TxrayTestCase):
    def test_without_the_agent_every_call_is_a_no_op(self):
        r = subprocess.run([PROBE], env=bare_env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "begin=0 step=0 nested=0 step=0 end=0 end_again=0 outside=0 begin2=0 end2=0")

    def test_with_the_agent_transactions_and_steps_are_recorded(self):
        with Collector(self.tmp) as c:
            r = subprocess.run([PROBE], env=agent_env(c.endpoint, app="c-api"), capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(),
                             "begin=1 step=1 nested=0 step=1 end=1 end_again=0 outside=0 begin2=1 end2=1")
            wait_transactions(c.db, 2)
        txs = {t["name"]: t for t in show_json(c.db, "--last", "10")}
        self.assertEqual(set(txs), {"nightly import", "failing job"})
        job = txs["nightly import"]
        self.assertEqual(job["kind"], "api")
        self.assertEqual([s["kind"] for s in job["steps"]], ["START", "MESSAGE", "MESSAGE", "END"])
        self.assertEqual([s["text"] for s in job["steps"][1:3]], ["parsed 1200 rows", "stored"])
        self.assertGreaterEqual(job["steps"][2]["gap_ns"], 2_000_000)  # the usleep is in the row after it
        check_sums(self, job)
        failed = txs["failing job"]
        self.assertEqual(failed["status"], 2)
        self.assertEqual(failed["error"], "disk full")
        check_sums(self, failed)
