"""CPU samples of each GAP (issue 11, part 2): the agent samples a transaction's thread on its CPU time
and attributes every sample to the row whose GAP it falls in.

- the relay sample without its own marks (--no-marks): the transaction's big CPU row names zlib's deflate
  functions for at least half of its samples, in `show --json` (per row: function, module, samples), as
  a "hot:" line under the row in `txray show`, and in the report's slowest transactions;
- the burner sample: the row after the back-end read (the burn) names the burn function;
- TXRAY_CPU_SAMPLES=0: no samples, and the agent says the sampler is off;
- programs with signals of their own (tests/reliability/subjects/cpu_signals.c), sampled every 1 ms of
  CPU so the timer fires often: one that profiles itself with SIGPROF and treats EINTR as fatal keeps
  its SIGPROF, never sees EINTR, prints what it prints bare; one that takes the sampler's signal for
  itself mid-run gets none of the sampler's signals, only its own.

Both samplers (TXRAY_CPU_SAMPLER, docs/stacks.md): every expectation above runs under the signal sampler
(CpuSamplesTest) and the ones that are not about signals under the perf_event_open sampler as well
(CpuSamplesPerfTest); python3 running a CPU-heavy zlib loop (transactions of the C API through ctypes)
names zlib's deflate under both; the fallback: where perf_event_open is refused (a seccomp filter, as a
container runtime's: tests/reliability/subjects/no_perf.c), auto runs the signal sampler and says why
(also when only the first thread's event is refused, after the start-up probe passed),
TXRAY_CPU_SAMPLER=perf runs none and says so, and auto elsewhere on this VM runs perf."""
import gzip
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "samples"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))

from reltools import subject  # noqa: E402
from sampletools import BIN, Server, http_get  # noqa: E402
from txraytest import (TXRAY, Collector, TxrayTestCase, agent_env, bare_env, check_sums, show_json, show_text,  # noqa: E402
                       wait_transactions)

ZLIB_DEFLATE = ("deflate", "longest_match", "fill_window", "compress_block", "send_tree", "build_tree",
                "_tr_", "crc32")


def named(db, app, name, n, timeout=30.0):
    """The transactions of `app` called `name` (a sample server's readiness probes are others), once n
    are stored."""
    deadline = time.monotonic() + timeout
    while True:
        txs = [t for t in show_json(db, "--app", app, "--last", "50") if t["name"] == name]
        if len(txs) >= n or time.monotonic() > deadline:
            return txs
        time.sleep(0.2)


def big_cpu_row(tx):
    return max(tx["steps"], key=lambda s: s["cpu_ns"])


def is_deflate(h):
    return h["module"].startswith("libz.so") and any(k in h["function"] for k in ZLIB_DEFLATE)


PY_ZLIB = """
import ctypes, random, sys, zlib
agent = ctypes.CDLL(None)
begin = getattr(agent, "txray_agent_begin", None)
end = getattr(agent, "txray_agent_end", None)
data = bytes(range(256)) * 64 + random.Random(1).randbytes(1 << 14)
data = data * 24
zlib.compress(data, 9)  # warm-up: the heap grows to its size here, outside the transactions
for r in range(int(sys.argv[1])):
    if begin:
        begin(b"zlib loop")
    n = sum(len(zlib.compress(data, 9)) for _ in range(20))
    if end:
        end(0, None)
    print(r, n)
"""

# glibc's malloc as a long-running server would tune it: freed memory stays in the heap. With the
# defaults each zlib.compress of PY_ZLIB gets fresh pages for its ~400 KB result and ~270 KB deflate state
# (the heap top is trimmed, large blocks are mmap'ed: ~230 page faults per call, 10-40% of the loop's CPU
# in the kernel, zeroing pages). The signal sampler's timer counts the thread's kernel time too, so those
# samples land on the faulting instruction: Python's zlib module copying its output blocks together
# (__memcpy_avx512_unaligned_erms under [python3.11], not under deflate): 4 of 10 samples in one CI run
# under load, while the perf sampler (user time only) saw 90-100% deflate. With these, no page fault after
# the warm-up (measured: 0 minor faults in the timed loops, sys time 0-2 ms of 60), so the loop's CPU is
# compression by construction, whichever sampler counts it.
PY_ZLIB_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


def sampler_of(tx):
    """The sampler an agent says it runs: the first word of its status (perf, signal, off)."""
    return tx["cpu_sampler"].replace(",", " ").split()[0]


class CpuSamplesTest(TxrayTestCase):
    SAMPLER = "signal"

    def setUp(self):
        super().setUp()
        self._saved_sampler = os.environ.get("TXRAY_CPU_SAMPLER")
        os.environ["TXRAY_CPU_SAMPLER"] = self.SAMPLER  # agent_env() copies the environment

    def tearDown(self):
        if self._saved_sampler is None:
            os.environ.pop("TXRAY_CPU_SAMPLER", None)
        else:
            os.environ["TXRAY_CPU_SAMPLER"] = self._saved_sampler
        super().tearDown()

    def test_relay_without_marks_names_deflate(self):
        with Collector(self.tmp) as c:
            backend = Server([os.path.join(BIN, "txray-relay-backend")], env=bare_env())
            try:
                text = http_get(backend.port, "/text")[2]
                relay = Server([os.path.join(BIN, "txray-relay"), "--backend", backend.addr(), "--inner-gzip=off",
                                "--level=9", "--no-marks"], env=agent_env(c.endpoint, app="relay-nomarks"))
                try:
                    for _ in range(3):
                        status, _, body = http_get(relay.port, "/page", {"Accept-Encoding": "gzip"}, timeout=120)
                        self.assertEqual(status, 200)
                        self.assertTrue(gzip.decompress(body).endswith(text + b"</pre></body></html>\n"))
                finally:
                    self.assertEqual(relay.stop(), 0)
            finally:
                self.assertEqual(backend.stop(), 0)
            wait_transactions(c.db, 3)
        txs = named(c.db, "relay-nomarks", "GET /page", 3)
        self.assertEqual(len(txs), 3)
        self.assertTrue(all(sampler_of(t) == self.SAMPLER for t in txs), txs[0].get("cpu_sampler"))
        shares = []
        for tx in txs:
            check_sums(self, tx)
            self.assertFalse([s for s in tx["steps"] if s["kind"] == "MESSAGE"], "no marks of the relay's own")
            row = big_cpu_row(tx)
            # ~10 ms of thread CPU per sample: a row's samples follow its CPU_T (wide margins: a loaded VM).
            expected = row["cpu_ns"] / 10e6
            self.assertGreaterEqual(row.get("cpu_samples", 0), max(3, 0.5 * expected), row)
            self.assertLessEqual(row["cpu_samples"], 1.5 * expected + 3, row)
            self.assertEqual(sum(s.get("cpu_samples", 0) for s in tx["steps"]), tx["cpu_samples"])
            deflate = sum(h["samples"] for h in row["hot"] if is_deflate(h))
            shares.append(deflate / row["cpu_samples"])
            self.assertGreaterEqual(deflate / row["cpu_samples"], 0.5, row["hot"])
            # The flame graph's stacks hold every sample, root first; deflate under the relay's gzip_compress.
            self.assertEqual(sum(st["samples"] for st in tx["cpu_stacks"]) + tx["cpu_samples_dropped"],
                             tx["cpu_samples"] + tx["cpu_samples_dropped"])
            self.assertTrue(any("gzip_compress" in st["folded"] and "deflate" in st["folded"]
                                for st in tx["cpu_stacks"]), tx["cpu_stacks"][:3])
        # The report's slowest transactions name their hottest functions.
        report = json.loads(subprocess.run([TXRAY, "report", "--db", c.db, "--format", "json"], check=True,
                                           capture_output=True, text=True).stdout)
        self.assertTrue(report["slowest"][0]["hot"].startswith("deflate (libz.so.1)"), report["slowest"][0])
        text_out = show_text(c.db, "--app", "relay-nomarks", "--last", "1")
        self.assertIn("hot: deflate", text_out)
        self.assertIn("(libz.so.1)", text_out)
        print(f"\n{self.SAMPLER}: relay --no-marks: big CPU row's deflate share {', '.join(f'{s:.0%}' for s in shares)}; "
              + next(line.strip() for line in text_out.splitlines() if "hot:" in line))

    def test_burner_rows_name_the_burn_function(self):
        with Collector(self.tmp) as c:
            backend = Server([os.path.join(BIN, "txray-burner"), "backend", "--listen", "127.0.0.1:0",
                              "--bytes", "100000"], channels=("tcp",), env=bare_env())
            try:
                serve = Server([os.path.join(BIN, "txray-burner"), "serve", "--listen", "127.0.0.1:0", "--backend",
                                f"127.0.0.1:{backend.ports['tcp']}", "--burn-ms", "150"],
                               env=agent_env(c.endpoint, app="burner-cpu"))
                try:
                    for _ in range(3):
                        self.assertEqual(http_get(serve.port, "/x", timeout=60)[0], 200)
                finally:
                    self.assertEqual(serve.stop(), 0)
            finally:
                self.assertEqual(backend.stop(), 0)
            wait_transactions(c.db, 3)
        txs = named(c.db, "burner-cpu", "GET /x", 3)
        self.assertEqual(len(txs), 3)
        for tx in txs:
            check_sums(self, tx)
            # The row with the samples (the burn is in END's GAP; a CPU_T is 0 when its row was made on
            # another thread than the previous one, the samples are placed by time all the same).
            row = max(tx["steps"], key=lambda s: s.get("cpu_samples", 0))
            self.assertGreaterEqual(row.get("cpu_samples", 0), 5, tx)
            # The burn loop reads the thread CPU clock (a system call) every 2,000 iterations, and a signal
            # is delivered on the way out of the kernel: many samples land in clock_gettime, called by the
            # burn function. The row names the burn function, and nearly every stack runs through it.
            burn = sum(h["samples"] for h in row["hot"] if "burn_cpu_us" in h["function"])
            self.assertGreaterEqual(burn / row["cpu_samples"], 0.25, row["hot"])
            under = sum(st["samples"] for st in tx["cpu_stacks"] if "burn_cpu_us" in st["folded"])
            self.assertGreaterEqual(under / tx["cpu_samples"], 0.8, tx["cpu_stacks"][:4])
            self.assertTrue(all(h["module"] == "txray-burner" for h in row["hot"] if "burn_cpu_us" in h["function"]))

    def test_python_zlib_loop(self):
        """A real third-party program: python3's zlib in a loop, three transactions begun and ended through
        the C API (ctypes). Output as bare; the transactions' CPU names zlib's deflate."""
        argv = ["/usr/bin/python3", "-c", PY_ZLIB, "3"]
        bare = subprocess.run(argv, env=bare_env(PY_ZLIB_MALLOC), capture_output=True, text=True, timeout=120)
        self.assertEqual(bare.returncode, 0, bare.stderr)
        with Collector(self.tmp) as c:
            traced = subprocess.run(argv, env=agent_env(c.endpoint, app="py-zlib", extra=PY_ZLIB_MALLOC),
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual((traced.returncode, traced.stdout), (0, bare.stdout), traced.stderr)
            wait_transactions(c.db, 3)
        txs = named(c.db, "py-zlib", "zlib loop", 3)
        self.assertEqual(len(txs), 3)
        shares = []
        for tx in txs:
            check_sums(self, tx)
            self.assertEqual(sampler_of(tx), self.SAMPLER, tx["cpu_sampler"])
            n = tx.get("cpu_samples", 0)
            self.assertGreaterEqual(n, max(3, 0.4 * tx["cpu_ns"] / 10e6), tx)
            self.assertEqual(sum(s.get("cpu_samples", 0) for s in tx["steps"]), n)
            # Stacks that run through zlib's deflate (its own frames, or libc's memcpy it called), called
            # from the interpreter: the loop is nearly all compression.
            under = sum(st["samples"] for st in tx["cpu_stacks"]
                        if ";deflate" in st["folded"] and "_PyEval_EvalFrameDefault" in st["folded"])
            shares.append(under / n)
            self.assertGreaterEqual(under / n, 0.5, tx["cpu_stacks"][:4])
        print(f"\n{self.SAMPLER}: python3 zlib loop: deflate share {', '.join(f'{s:.0%}' for s in shares)}")

    def test_waits_of_a_program_without_handlers_never_return_eintr(self):
        """poll() and select() are never restarted after a signal handler (SA_RESTART does not apply).
        A program with no handler of its own waits in them over 400 empty pipes with a 1 ms timeout, so
        its CPU time is spent in the kernel setting the waits up, and is sampled every 1 ms there: no wait
        returns EINTR, and samples were taken (kernels with POSIX_CPU_TIMERS_TASK_WORK, 5.11+ on x86-64,
        send a CPU timer's signal on the way back to user space, after the call has returned;
        docs/stacks.md)."""
        argv = [subject("poll_eintr"), "25", "400"]
        bare = subprocess.run(argv, env=bare_env(), capture_output=True, text=True, timeout=120)
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertIn(" eintr 0", bare.stdout)
        # A CPU-time timer fires at a kernel tick that finds the thread running; this program runs in
        # ~11 us bursts between 1 ms sleeps, and on an otherwise idle CPU the tick is stopped between them
        # (NO_HZ), so how many samples one run gets depends on the neighbours' load (19 in one run, 2 in a
        # quiet CI run, 0-5 here): a count of chance tick hits, so runs are repeated, each checked for
        # EINTR, until more than 5 samples were taken (at most 8 runs), and the test asks only that some
        # were (without one, no wait was interrupted by a sample and the EINTR check tested nothing).
        samples, runs = 0, 0
        while runs < 8 and (runs == 0 or (self.SAMPLER == "signal" and samples <= 5)):
            runs += 1
            with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/waits{runs}.sock", db=f"{self.tmp}/waits{runs}.db") as c:
                traced = subprocess.run(argv, env=agent_env(c.endpoint, app="waits", extra={"TXRAY_CPU_SAMPLE_MS": "1"}),
                                        capture_output=True, text=True, timeout=120)
                self.assertEqual((traced.returncode, traced.stdout), (0, bare.stdout), traced.stderr)
                wait_transactions(c.db, 25)
                txs = show_json(c.db, "--app", "waits", "--last", "25")
            self.assertEqual(len(txs), 25)
            samples += sum(t.get("cpu_samples", 0) for t in txs)
        if self.SAMPLER == "signal":
            # The signal sampler's timer counts the thread's kernel time too: samples fell inside the waits.
            # The perf sampler counts user time only (exclude_kernel) and sends no signal at all: it may take
            # none here, and a wait can never return EINTR because of it.
            self.assertGreater(samples, 0, [t["cpu_ns"] for t in txs])
        print(f"\n{self.SAMPLER}: {traced.stdout.strip()} with {samples} samples taken during the waits ({runs} runs)")

    def test_off(self):
        with Collector(self.tmp) as c:
            argv = [subject("cpu_signals"), "sigprof", "4", "30000"]
            run = subprocess.run(argv, env=agent_env(c.endpoint, app="cpu-off", extra={"TXRAY_CPU_SAMPLES": "0"}),
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            wait_transactions(c.db, 8)
        txs = show_json(c.db, "--app", "cpu-off", "--last", "8")
        self.assertEqual(len(txs), 8)
        for tx in txs:
            self.assertNotIn("cpu_samples", tx)
            self.assertEqual(tx["cpu_sampler"], "off (TXRAY_CPU_SAMPLES=0)")

    def run_subject(self, app, *args):
        argv = [subject("cpu_signals"), *args]
        bare = subprocess.run(argv, env=bare_env(), capture_output=True, text=True, timeout=120)
        with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/{app}.sock", db=f"{self.tmp}/{app}.db") as c:
            traced = subprocess.run(argv, env=agent_env(c.endpoint, app=app, extra={"TXRAY_CPU_SAMPLE_MS": "1"}),
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual((traced.returncode, traced.stdout), (bare.returncode, bare.stdout),
                             f"bare: {bare.stderr} traced: {traced.stderr}")
            self.assertNotIn("EINTR", traced.stderr)
            n = int(args[1])
            wait_transactions(c.db, 2 * n, timeout=60)
            txs = show_json(c.db, "--last", str(2 * n))
        self.assertEqual(len(txs), 2 * n)
        return bare, traced, txs

    def test_program_with_its_own_sigprof_and_fatal_eintr(self):
        n = 100
        bare, traced, txs = self.run_subject("cpu-sigprof", "sigprof", str(n), "5000")
        self.assertIn("own SIGPROF received: yes", traced.stdout)
        samples = sum(t.get("cpu_samples", 0) for t in txs)
        prof = int(traced.stderr.split("sigprof ")[1].split()[0])
        # 2 x 100 transactions of >= 5 ms of CPU each, sampled every 1 ms. A CPU-time timer fires at the
        # kernel's tick at most (here ~1 per 5 ms of CPU, fewer under load: 95 signals for 500 ms of CPU
        # at -j2 with two busy loops beside), so the figure to hold the samples to is what the program's
        # own 1 ms SIGPROF timer got in the same run: the same kind of timer, over the process's CPU
        # (transactions and the rest). An absolute 200 failed under load with 128 samples.
        self.assertGreater(samples, 20)
        self.assertGreater(samples, prof // 4, f"{samples} samples, the program's own SIGPROF: {prof}")
        self.assertTrue(any("burn" in h["function"] for t in txs for s in t["steps"] for h in s.get("hot", [])))
        print(f"\nown SIGPROF ({prof} ticks) and a sample every 1 ms: "
              f"{samples} samples in {len(txs)} transactions, no EINTR, output as bare")

    def test_program_that_takes_the_samplers_signal(self):
        n = 40
        # The sampler's signal: the agent says which one it uses.
        probe = self.run_subject("cpu-probe", "sigprof", "2", "20000")[2]
        sig = int(probe[0]["cpu_sampler"].split()[1].rstrip(","))
        bare, traced, txs = self.run_subject("cpu-take", "take", str(n), "5000", str(sig))
        self.assertIn(f"own signal {sig} received: 1, from elsewhere: 0", traced.stdout)
        first = [t for t in txs if t["name"] in {f"call {i}" for i in range(n // 2 - 1)}]
        self.assertTrue(any(t.get("cpu_samples", 0) > 0 for t in first), "sampled before the program took it")
        self.assertTrue(txs[-1]["cpu_sampler"].startswith("off (the program took signal"), txs[-1]["cpu_sampler"])


class CpuSamplesPerfTest(CpuSamplesTest):
    """The same expectations under the perf_event_open sampler (no signal at all reaches the program)."""
    SAMPLER = "perf"

    def test_off(self):
        self.skipTest("the same under both samplers: run once, with the signal sampler")

    def test_program_that_takes_the_samplers_signal(self):
        self.skipTest("about the signal sampler's signal")


class SamplerChoiceTest(TxrayTestCase):
    """Which sampler runs, and that the agent says it: auto takes perf where perf_event_open works (this
    VM) and falls back to the signal sampler where it is refused."""

    def run_zlib(self, app, sampler, wrap=(), **extra_env):
        argv = [*wrap, "/usr/bin/python3", "-c", PY_ZLIB, "2"]
        with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/{app}.sock", db=f"{self.tmp}/{app}.db") as c:
            env = agent_env(c.endpoint, app=app)
            env.pop("TXRAY_CPU_SAMPLER", None)
            if sampler:
                env["TXRAY_CPU_SAMPLER"] = sampler
            env.update(extra_env)
            run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(len(run.stdout.splitlines()), 2, run.stdout)
            wait_transactions(c.db, 2)
            txs = named(c.db, app, "zlib loop", 2)
        self.assertEqual(len(txs), 2)
        for tx in txs:
            check_sums(self, tx)
        return txs

    def test_auto_takes_perf_here(self):
        for tx in self.run_zlib("auto", None):
            self.assertTrue(tx["cpu_sampler"].startswith("perf, every 10000 us of thread CPU"), tx["cpu_sampler"])
            self.assertGreater(tx.get("cpu_samples", 0), 0)

    def test_refused_perf_falls_back_to_signal(self):
        wrap = (subject("no_perf"),)
        fallback = self.run_zlib("fallback", None, wrap)
        for tx in fallback:
            self.assertTrue(tx["cpu_sampler"].startswith("signal "), tx["cpu_sampler"])
            self.assertIn("perf refused: perf_event_open: Permission denied", tx["cpu_sampler"])
            self.assertGreater(tx.get("cpu_samples", 0), 0)
        for tx in self.run_zlib("perf-only", "perf", wrap):
            self.assertEqual(tx["cpu_sampler"], "off (TXRAY_CPU_SAMPLER=perf: perf_event_open: Permission denied)")
            self.assertNotIn("cpu_samples", tx)
        print(f"\nperf_event_open refused: {fallback[0]['cpu_sampler']}")

    def test_filter_that_kills_is_never_triggered(self):
        """A seccomp filter whose action for perf_event_open is to kill the process (a systemd unit's
        SystemCallFilter= without SystemCallErrorNumber=): the agent asks a vfork()ed child first and never
        makes the call itself — auto takes the signal sampler, TXRAY_CPU_SAMPLER=perf is off, and with
        samples off the CPU clock keeps the system call; the program runs to its end every time."""
        wrap = (subject("no_perf"), "--kill")
        for tx in self.run_zlib("kill-auto", None, wrap):
            self.assertTrue(tx["cpu_sampler"].startswith("signal "), tx["cpu_sampler"])
            self.assertIn("perf refused: a seccomp filter here kills perf_event_open: not called", tx["cpu_sampler"])
        for tx in self.run_zlib("kill-perf", "perf", wrap):
            self.assertEqual(tx["cpu_sampler"],
                             "off (TXRAY_CPU_SAMPLER=perf: a seccomp filter here kills perf_event_open: not called)")
        # Samples off: the switch-checked clock would open its own perf page at a thread's 16th
        # transaction (core/clock_page.h); 40 of them, and the program still runs to its end.
        many = ("import ctypes\nagent = ctypes.CDLL(None)\n"
                "for i in range(40):\n    agent.txray_agent_begin(b'tx')\n    agent.txray_agent_end(0, None)\n"
                "print('done')\n")
        with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/kill-off.sock", db=f"{self.tmp}/kill-off.db") as c:
            env = agent_env(c.endpoint, app="kill-off")
            env["TXRAY_CPU_SAMPLES"] = "0"
            run = subprocess.run([*wrap, "/usr/bin/python3", "-c", many], env=env, capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual((run.returncode, run.stdout), (0, "done\n"), run.stderr)
            wait_transactions(c.db, 40)

    def test_refused_first_event_falls_back_to_signal(self):
        """The start-up probe passes but the first thread's event is refused (as a ring refused by a
        locked-memory limit would be): auto switches to the signal sampler there, the first transaction
        already sampled by it."""
        for tx in self.run_zlib("first-open", None, (subject("no_perf"), "--events-only")):
            self.assertTrue(tx["cpu_sampler"].startswith("signal "), tx["cpu_sampler"])
            self.assertIn("perf refused: perf_event_open: Permission denied", tx["cpu_sampler"])
            self.assertGreater(tx.get("cpu_samples", 0), 0, tx)


if __name__ == "__main__":
    unittest.main()
