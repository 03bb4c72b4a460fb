"""Exit cost: tests/reliability/subjects/forker.c (txray-rel-forker) forks CHILDREN children one after the
other, each serving its parent one HTTP request and exiting; run bare and under the agent with each CPU
sampler (signal, perf), the collector down (a port nobody listens on: every child's exit send is one
refused connection attempt). ROUNDS rounds, the three variants interleaved in each, so that the
neighbours' load lands on all of them alike.

Prints per variant the wall time and the CPU time of the whole process tree (user + system, the parent
and every child), each round and the median, and the medians' ratio to bare: the figure that
docs/reliability.md quotes ("within 2x of bare"). Beside them, the page faults per child and per fork in
the parent: counts, the same in every round, which reliability.test_exit_cost bounds in `make test`.
On a shared 2-vCPU VM the wall time mostly measures the other load (every hand-over between parent and
child waits for a CPU); read the CPU ratio, and run on a quiet machine for the wall ratio.
Environment: CHILDREN (default 1000: the CPU clock of a process tree counts in 10 ms ticks), ROUNDS
(default 5)."""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "build")
FORKER = os.path.join(BUILD, "bin", "txray-rel-forker")
AGENT = os.path.join(BUILD, "lib", "libtxray-agent.so")
CHILDREN = int(os.environ.get("CHILDREN", "1000"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(env):
    """One run: (wall s, CPU s of the tree, own faults, children's faults)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen([FORKER, str(CHILDREN)], env=env, stdout=out, stderr=err)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # a zombie keeps its counters, children included
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        out, err = out.read(), err.read()
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    p.wait()
    if p.returncode != 0 or out != f"served {CHILDREN}\n".encode():
        sys.exit(f"exit_cost: forker failed ({p.returncode}): {out!r} {err.decode(errors='replace')}")
    cpu = sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return wall, cpu, int(fields[7]) + int(fields[9]), int(fields[8]) + int(fields[10])


def main():
    bare = dict(os.environ)
    bare.pop("LD_PRELOAD", None)
    down = f"tcp://127.0.0.1:{free_port()}"
    variants = {"bare": bare}
    for sampler in ("signal", "perf"):
        variants[sampler] = dict(bare, LD_PRELOAD=AGENT, TXRAY_COLLECTOR=down, TXRAY_APP="exit-cost",
                                 TXRAY_CPU_SAMPLER=sampler)
    results = {v: [] for v in variants}
    for _ in range(ROUNDS):
        for v, env in variants.items():
            results[v].append(run(env))
    print(f"exit_cost: {CHILDREN} forked children, one request each, collector down; {ROUNDS} rounds alternating "
          f"{', '.join(variants)}; load average {os.getloadavg()[0]:.1f}")
    bw = statistics.median(r[0] for r in results["bare"])
    bc = statistics.median(r[1] for r in results["bare"])
    for v, rs in results.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs)
        child = statistics.median(r[3] / CHILDREN for r in rs)
        fork = statistics.median(r[2] / CHILDREN for r in rs)
        print(f"  {v:<6} wall median {wall:.2f} s ({wall / bw:.2f}x bare {bw:.2f} s)  CPU median {cpu:.2f} s "
              f"({cpu / bc:.2f}x bare {bc:.2f} s)  page faults per child {child:.1f}, per fork in the parent {fork:.1f}"
              f"   [wall: {' '.join(f'{r[0]:.2f}' for r in rs)}; CPU: {' '.join(f'{r[1]:.2f}' for r in rs)}]")


if __name__ == "__main__":
    main()
