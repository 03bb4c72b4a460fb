"""Short-lived threads (issue 12): a thread-per-connection server and client threads in one process
(subjects/thread_churn.c), half of the handlers calling pthread_exit() with their request still open
(another thread ends it later by closing the connection), a quarter of the clients calling pthread_exit()
inside their txray_begin() transaction. Identical output to bare; every request and every client
transaction stored; the agent's memory stays flat (RSS printed).

Found here: the request of a handler that had exited was ended by the reaper thread writing into the dead
thread's TLS — a SIGSEGV in 4 runs of 6 (agent/core/transaction.cpp: OwnerSlot)."""
import os
import subprocess

from reltools import subject
from txraytest import Collector, TxrayTestCase, agent_env, bare_env, show_json, wait_transactions

# Threads in all (half clients, half handlers): 2,000 in `make test` (a few seconds), 10,000 in `make soak`.
THREADS = int(os.environ.get("TXRAY_REL_THREADS", "2000"))


def rss(stderr):
    """(RSS after the first wave, RSS at the end) in KiB, from the subject's stderr."""
    line = next(l for l in stderr.splitlines() if l.startswith("rss_kb"))
    first, end = (int(kv.split("=")[1]) for kv in line.split()[1:])
    return first, end


class Threads(TxrayTestCase):
    def test_short_lived_threads_some_exiting_mid_request(self):
        n = THREADS // 2
        argv = [subject("thread_churn"), str(n)]
        bare = subprocess.run(argv, env=bare_env(), capture_output=True, text=True, timeout=300)
        self.assertEqual((bare.returncode, bare.stdout), (0, f"requests {n} ok {n}\n"), bare.stderr)
        with Collector(self.tmp) as c:
            traced = subprocess.run(argv, env=agent_env(c.endpoint, app="churn"), capture_output=True, text=True,
                                    timeout=300)
            self.assertEqual((traced.returncode, traced.stdout), (bare.returncode, bare.stdout), traced.stderr)
            wait_transactions(c.db, 2 * n, timeout=60)
            txs = show_json(c.db, "--last", str(4 * n))
        http = [t for t in txs if t["kind"] == "http"]
        api = [t for t in txs if t["kind"] == "api"]
        self.assertEqual(sorted(t["name"] for t in http), sorted(f"GET /{i}" for i in range(n)))
        self.assertEqual(sorted(t["name"] for t in api), sorted(f"client {i}" for i in range(n)))
        for t in http:
            self.assertEqual((t["status"], t["error"]), (200, ""), t["name"])
        # The clients that exited inside their transaction: ended at the thread's exit, with an error.
        for t in api:
            i = int(t["name"].split()[1])
            self.assertEqual(t["error"], "thread exited before txray_end" if i % 4 == 3 else "", t["name"])
            calls = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"]
            self.assertEqual(len(calls), 1, t["name"])
        callees = {s["callee_txid"] for t in api for s in t["steps"] if s["kind"] == "HTTP_CALL"}
        self.assertEqual(callees, {t["txid"] for t in http})
        (bf, be), (tf, te) = rss(bare.stderr), rss(traced.stderr)
        print(f"\n{2 * n} short-lived threads ({n // 2} handlers and {n // 4} clients exiting mid-request): {n}/{n} requests and {n}/{n} client "
              f"transactions stored; RSS after the first 64 threads -> at the end: bare {bf} -> {be} KiB, "
              f"agent {tf} -> {te} KiB (growth {te - tf} KiB)")
        # Flat: the agent's growth over the run is no more than 2 MiB beyond bare's (measured: +0.3-0.6
        # MiB over 2,000-40,000 threads, the same at every size).
        self.assertLess(te - tf, (be - bf) + 2048)
