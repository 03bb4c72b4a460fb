"""Signals and abrupt exits (issue 12), with subjects/signals.c: a server thread and a client (the main
thread) in one process, each call in a transaction of its own.

- a SIGALRM every 100 us (SA_RESTART) in a program for which any EINTR is fatal: identical output, no
  EINTR, every transaction stored;
- every signal blocked in main() before any thread: signals sent to the process are taken by the program
  as sent (sigtimedwait), every thread (the agent's too) blocks everything, the caught signals are bare's;
- exit() from a signal handler mid-response: exit status kept, the response it cut short stored (the
  kernel ends it at exit); exit() from a SIGALRM handler at a random point, 20 times: never a hang
  (found here: a signal that interrupted the agent while it held the process transaction's lock made the
  agent's exit handler wait for that lock forever — 1 run in about 30);
- _exit() mid-response: exit status kept; what finished before is stored, the request cut short is not
  (no code runs at _exit: it cannot be sent)."""
import os
import subprocess

from reltools import subject
from txraytest import Collector, TxrayTestCase, agent_env, bare_env, show_json, wait_transactions

# Calls under the SIGALRM storm: 5,000 in `make test` (a second or two), more in `make soak`.
STORM_CALLS = int(os.environ.get("TXRAY_REL_STORM_CALLS", "5000"))
# exit() from the storm's handler: runs of each mode (process, http).
EXIT_RUNS = int(os.environ.get("TXRAY_REL_EXIT_RUNS", "10"))


class Signals(TxrayTestCase):
    def both(self, mode, n, app, timeout=120, extra=None):
        """Runs the subject bare and under the agent (into a fresh collector); returns (bare, traced,
        transactions stored)."""
        argv = [subject("signals"), mode, str(n)]
        bare = subprocess.run(argv, env=bare_env(), capture_output=True, text=True, timeout=timeout)
        with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/{app}.sock", db=f"{self.tmp}/{app}.db") as c:
            traced = subprocess.run(argv, env=agent_env(c.endpoint, app=app, extra=extra), capture_output=True,
                                    text=True, timeout=timeout)
            self.assertEqual((traced.returncode, traced.stdout), (bare.returncode, bare.stdout),
                             f"bare: {bare.stderr} traced: {traced.stderr}")
            want = {"storm": 2 * n, "blocked": 2 * n, "exit-handler": 2 * n + 1, "_exit": 2 * n}[mode]
            wait_transactions(c.db, want, timeout=60)
            txs = show_json(c.db, "--last", str(2 * want + 10))
        return bare, traced, txs

    def test_sigalrm_storm_in_a_program_for_which_eintr_is_fatal(self):
        bare, traced, txs = self.both("storm", STORM_CALLS, "storm")
        self.assertEqual(bare.stdout, f"requests {STORM_CALLS} ok {STORM_CALLS}\n", bare.stderr)
        self.assertNotIn("EINTR", traced.stderr)
        self.assertEqual(len(txs), 2 * STORM_CALLS)
        alarms = int(traced.stderr.split("alarms ")[1].split()[0])
        print(f"\nSIGALRM every 100 us: {alarms} signals during {STORM_CALLS} calls, no EINTR, output as bare, "
              f"{len(txs)}/{2 * STORM_CALLS} transactions stored")

    def test_all_signals_blocked(self):
        n = 50
        # The signal CPU sampler installs one handler, for a real-time signal the program does not use
        # (docs/agent.md, "CPU samples"): the only disposition the agent adds. Compared exactly with sampling
        # off; with the signal sampler, the caught-signal mask may differ by that one signal, nothing else;
        # with the perf sampler (auto, where perf_event_open works: docs/stacks.md) by nothing at all.
        bare, traced, txs = self.both("blocked", n, "blocked", extra={"TXRAY_CPU_SAMPLES": "0"})
        argv = [subject("signals"), "blocked", str(n)]
        runs = {}
        for sampler in ("signal", "perf"):
            with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/blocked-{sampler}.sock",
                           db=f"{self.tmp}/blocked-{sampler}.db") as c:
                runs[sampler] = subprocess.run(
                    argv, env=agent_env(c.endpoint, app="blocked-cpu", extra={"TXRAY_CPU_SAMPLER": sampler}),
                    capture_output=True, text=True, timeout=120)
        on = runs["signal"]
        cgt = lambda out: int(out.split("caught signals: ")[1].split()[0], 16)  # noqa: E731
        self.assertEqual(cgt(runs["perf"].stdout), cgt(bare.stdout), runs["perf"].stdout)
        extra = cgt(on.stdout) & ~cgt(bare.stdout)
        self.assertEqual(cgt(bare.stdout) & ~cgt(on.stdout), 0, on.stdout)
        self.assertIn(extra.bit_length(), range(54, 62), f"sampler's signal: {extra:x}")  # SIGRTMAX-10 .. -3
        self.assertEqual(bin(extra).count("1"), 1, f"{extra:x}")
        self.assertEqual(on.stdout.split("caught signals")[0], bare.stdout.split("caught signals")[0])
        self.assertIn(f"signals taken as sent: {n} of {n} rounds\n", bare.stdout)
        self.assertIn("threads with every signal blocked: all\n", traced.stdout)
        self.assertEqual(len(txs), 2 * n)
        tasks = traced.stderr.split("tasks ")[1].split(",")[0]
        print(f"\nall signals blocked: {n} rounds of SIGUSR1 + 16 queued SIGRTMIN taken as sent; {tasks} threads "
              f"under the agent (bare: 2), every one blocking everything; caught signals as bare; "
              f"{len(txs)}/{2 * n} stored")

    def test_exit_from_a_signal_handler_mid_response(self):
        n = 20
        bare, traced, txs = self.both("exit-handler", n, "exithandler")
        self.assertEqual(bare.returncode, 3)
        served = [t for t in txs if t["kind"] == "http"]
        self.assertEqual(sorted(t["name"] for t in served), sorted([f"GET /r{i}" for i in range(n)] + ["GET /last"]))
        (last,) = [t for t in served if t["name"] == "GET /last"]
        self.assertEqual((last["status"], last["error"]), (200, ""))  # a response that ends at close: complete
        # The client's transaction open at exit (txray_begin, no txray_end) is not sent.
        self.assertEqual(sorted(t["name"] for t in txs if t["kind"] == "api"), sorted(f"call {i}" for i in range(n)))
        print(f"\nexit() from a signal handler mid-response: exit status 3 as bare; {n + 1}/{n + 1} requests stored, "
              f"the one cut short with status 200; the caller's transaction open at exit: not sent")

    def test_exit_from_a_sigalrm_handler_at_any_point_never_hangs(self):
        argv = [subject("signals"), "exit-storm", "0"]
        with Collector(self.tmp) as c:
            for mode in ("process", "http"):
                for _ in range(EXIT_RUNS):
                    r = subprocess.run(argv, env=agent_env(c.endpoint, mode=mode, app=f"exitstorm-{mode}"),
                                       capture_output=True, timeout=30)  # a hang fails here
                    self.assertEqual((r.returncode, r.stderr), (5, b""))
            wait_transactions(c.db, EXIT_RUNS)  # process mode: one transaction per run
            procs = [t for t in show_json(c.db, "--last", "100000", "--app", "exitstorm-process") if t["kind"] == "process"]
        # A run whose signal came while the agent was in the middle of a row of the process transaction
        # does not send it (lifecycle.cpp: at_exit); the others do.
        self.assertGreaterEqual(len(procs), 1)
        for t in procs:
            self.assertEqual(t["error"], "exit status 5")
        print(f"\nexit() from a SIGALRM handler at the 2,000th signal: {2 * EXIT_RUNS}/{2 * EXIT_RUNS} runs exited 5 "
              f"(none hung); process mode: {len(procs)}/{EXIT_RUNS} process transactions stored")

    def test_underscore_exit_mid_response(self):
        n = 20
        bare, traced, txs = self.both("_exit", n, "uexit")
        self.assertEqual(bare.returncode, 9)
        names = sorted(t["name"] for t in txs)
        # Everything finished 50 ms before _exit() is stored; the request cut short and the caller's open
        # transaction are not: no code of the process runs after _exit().
        self.assertEqual(names, sorted([f"GET /r{i}" for i in range(n)] + [f"call {i}" for i in range(n)]))
        print(f"\n_exit() mid-response: exit status 9 as bare; {len(txs)}/{2 * n} finished transactions stored, "
              f"the request cut short and its caller's transaction lost (nothing runs after _exit)")
