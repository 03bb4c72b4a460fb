"""What the agent costs a process at its end: with the collector down, forked children that
each serve one request finish close to their bare cost (the exit flush makes one connection attempt,
refused in microseconds, and waits 20 ms at most for one that hangs); and a response that ends only
when the process exits (a fork-per-connection child that exit()s without closing its connection) is
still stored.

The cost is decided on counts, which a loaded machine does not move: the page faults of each child and
of the parent per fork (what makes a short-lived process dear on a VM: docs/reliability.md), and the
system calls of each child (strace): none starts a thread, each makes exactly one connection attempt.
The wall and CPU times are printed beside the bare run's, never asserted: their ratio is
bench/exit_cost's figure (a ratio of two short timed runs on a shared 2-core VM moved from 2.0x to 4.2x
between runs)."""
import collections
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

from reltools import Run, get, subject
from txraytest import Collector, TxrayTestCase, agent_env, bare_env, check_sums, free_port, show_json, \
    wait_transactions

# `make test` runs 300 (a few seconds); TXRAY_REL_CHILDREN=1000 for a longer run (make soak).
CHILDREN = int(os.environ.get("TXRAY_REL_CHILDREN", "300"))
TRACED_CHILDREN = 40  # children run under strace: enough for a median, a second of tracing

# What the agent may add, in counts (measured on Debian 12, 2-vCPU VM, both samplers, quiet and with two
# busy loops beside: identical). Page faults per child: +38 with the signal sampler, +50 with perf (its
# event's ring is mapped and read in the child); per fork in the parent: +13 to +15 (every page the
# parent's agent wrote since the last fork is write-protected by the next one). System calls per child:
# +33 (signal), +34 (perf): the post-fork reset and ids (4), the request (getpeername, gettid, clock
# reads), the sampler's timer or event (2-4), the identity read from /proc (7), one batch buffer, and
# the exit send (socket ... close: 9). The bounds leave about a third for libc and kernel differences;
# a child that waited for its agent thread, or a post-fork reset that touched every slot again, is far
# past them (the span-table wipe alone was +40 faults per child).
FAULTS_PER_CHILD = {"signal": 60, "perf": 72}
FAULTS_PER_FORK = 24
SYSCALLS_PER_CHILD = 48


def run_counted(argv, env, timeout=120):
    """Runs argv to its end; returns (CompletedProcess-like tuple: returncode, stdout, stderr), the page
    faults of the process itself (minor + major) and of all its children together, and its wall and CPU
    seconds (itself and its children). The parent's own faults are read from /proc once it is a zombie
    (waitid WNOWAIT), before it is reaped: its children are counted in its cminflt by then."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        deadline = t0 + timeout
        # Waited for without reaping it (WNOWAIT): a zombie's /proc/PID/stat still holds its counters.
        while os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
            if time.monotonic() > deadline:
                p.kill()
                p.wait()
                raise AssertionError(f"{argv} still running after {timeout} s")
            time.sleep(0.01)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        output = out.read(), err.read()
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the ")": state(0) ... minflt(7) cminflt(8) majflt(9) cmajflt(10) utime(11) stime(12) cutime(13) cstime(14)
    own = int(fields[7]) + int(fields[9])
    children = int(fields[8]) + int(fields[10])
    cpu = sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    p.wait()
    return (p.returncode, *output), own, children, wall, cpu


SYSCALL = re.compile(r"^([a-z_0-9]+)\(")


def child_syscalls(argv, env, workdir):
    """Runs argv under `strace -f -ff`; returns, for each forked child (a process of its own, not the
    parent and not a thread of it), a Counter of its system calls by name."""
    out = os.path.join(workdir, "trace")
    r = subprocess.run(["strace", "-f", "-ff", "-qq", "-o", out, *argv], env=env, capture_output=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"strace {argv}: {r.returncode} {r.stderr.decode(errors='replace')}")
    children = []
    for name in sorted(os.listdir(workdir)):
        if not name.startswith("trace."):
            continue
        with open(os.path.join(workdir, name)) as f:
            calls = collections.Counter(m.group(1) for m in map(SYSCALL.match, f) if m)
        # The parent is the one that execs the program, and its threads never call exit_group: a child
        # is a file with no execve and one exit_group.
        if calls["execve"] == 0 and calls["exit_group"] == 1:
            children.append(calls)
        os.remove(os.path.join(workdir, name))
    return r, children


class ExitCost(TxrayTestCase):
    def test_forked_children_with_the_collector_down(self):
        down = f"tcp://127.0.0.1:{free_port()}"  # nobody listens there
        argv = [subject("forker"), str(CHILDREN)]
        (rc, out, err), bare_own, bare_children, bare_wall, bare_cpu = run_counted(argv, bare_env())
        self.assertEqual((rc, out), (0, f"served {CHILDREN}\n".encode()), err)
        bare_child, bare_fork = bare_children / CHILDREN, bare_own / CHILDREN

        strace = shutil.which("strace")
        bare_calls = None
        if strace:
            traced_argv = [subject("forker"), str(TRACED_CHILDREN)]
            with tempfile.TemporaryDirectory(dir=self.tmp) as d:
                _, bare_calls = child_syscalls(traced_argv, bare_env(), d)
            self.assertEqual(len(bare_calls), TRACED_CHILDREN)
        for sampler in ("signal", "perf"):
            with self.subTest(sampler=sampler):
                env = agent_env(down, app="forker", extra={"TXRAY_CPU_SAMPLER": sampler})
                (rc, out, err), own, children, wall, cpu = run_counted(argv, env)
                self.assertEqual((rc, out), (0, f"served {CHILDREN}\n".encode()), err)
                per_child, per_fork = children / CHILDREN, own / CHILDREN
                print(f"\n{CHILDREN} forked children, collector down, {sampler} sampler: page faults per child "
                      f"bare {bare_child:.1f}, agent {per_child:.1f} ({per_child - bare_child:+.1f}; bound "
                      f"+{FAULTS_PER_CHILD[sampler]}); in the parent per fork bare {bare_fork:.1f}, agent {per_fork:.1f} "
                      f"({per_fork - bare_fork:+.1f}; bound +{FAULTS_PER_FORK}). Not asserted (bench/exit_cost): "
                      f"wall bare {bare_wall:.2f} s, agent {wall:.2f} s; CPU bare {bare_cpu:.2f} s, agent {cpu:.2f} s",
                      flush=True)
                self.assertLessEqual(per_child - bare_child, FAULTS_PER_CHILD[sampler])
                self.assertLessEqual(per_fork - bare_fork, FAULTS_PER_FORK)
                if not strace:
                    print("strace is not installed: system calls not counted", flush=True)
                    continue
                with tempfile.TemporaryDirectory(dir=self.tmp) as d:
                    r, calls = child_syscalls(traced_argv, env, d)
                self.assertEqual(r.stdout, f"served {TRACED_CHILDREN}\n".encode(), r.stderr)
                self.assertEqual(len(calls), TRACED_CHILDREN)
                # No child starts a thread (its exit sends on the exiting thread), and each makes one
                # connection attempt: the exit send, refused at once.
                self.assertEqual([c["clone"] + c["clone3"] for c in calls], [0] * TRACED_CHILDREN)
                self.assertEqual([c["connect"] for c in calls], [1] * TRACED_CHILDREN)
                median = statistics.median(sum(c.values()) for c in calls)
                bare_median = statistics.median(sum(c.values()) for c in bare_calls)
                typical = min(calls, key=lambda c: abs(sum(c.values()) - median))
                added = typical - bare_calls[-1]
                print(f"system calls per child (median of {TRACED_CHILDREN}, strace): bare {bare_median:g}, agent "
                      f"{median:g} ({median - bare_median:+g}; bound +{SYSCALLS_PER_CHILD}): "
                      + ", ".join(f"{k} {v}" for k, v in sorted(added.items(), key=lambda kv: (-kv[1], kv[0]))),
                      flush=True)
                self.assertLessEqual(median - bare_median, SYSCALLS_PER_CHILD)

    def test_children_that_exit_without_closing_their_connection(self):
        def run(endpoint):
            r = Run(self, [subject("fork_exit_server"), "PORT", 20], endpoint, app="forkexit")
            bodies = [get(r.port, f"/c{i}") for i in range(20)]
            return r.finish(), bodies

        bare, bare_bodies = run(None)
        self.assertEqual(bare.out, "served 20\n")
        with Collector(self.tmp) as c:
            traced, traced_bodies = run(c.endpoint)
            wait_transactions(c.db, 20)
            txs = show_json(c.db, "--last", "100")
        self.assertEqual((traced.rc, traced.out, traced_bodies), (bare.rc, bare.out, bare_bodies))
        self.assertEqual(sorted(t["name"] for t in txs), sorted(f"GET /c{i}" for i in range(20)))
        for t in txs:
            check_sums(self, t)
            self.assertEqual(t["status"], 200)
