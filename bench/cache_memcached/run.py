#!/usr/bin/env python3
"""What the agent adds to a memcached command parsed on the wire (agent/protocols/memcached), in one run.

Starts a throw-away memcached (loopback, no UDP) and a collector, then runs each client ROUNDS times, bare
and under the agent in process mode (one transaction per run: its first 1,000 rows kept, the rest folded
into summary lines), interleaved (bare then agent, the next round agent then bare; a traced run's
transaction is stored before the next run starts, so the collector's work overlaps no run):
- memcslap (libmemcached's load generator, C, text protocol) -t get: its sets of the initial load, then
  the gets;
- a pymemcache loop of gets (Python, one command per write and read; its loop only, start-up left out).
The figure is the client process's CPU (user + system, every thread: the agent's transport thread too) per
command the server counted (`stats`: cmd_get + cmd_set + cmd_touch + delete/incr/decr hits and misses):
the medians, and what the agent adds, side by side. The server is not traced.

    bench/cache_memcached/run.py BUILD_DIR        (env: N=100000 ROUNDS=11)
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
BUILD = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("TXRAY_BUILD_DIR", BUILD)
from txraytest import PYTHON, Collector, agent_env, bare_env, count_transactions, free_port, wait_port  # noqa: E402

N = int(os.environ.get("N", "100000"))
ROUNDS = int(os.environ.get("ROUNDS", "11"))
MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"
MEMCSLAP = shutil.which("memcslap") or "/usr/bin/memcslap"

PY_LOOP = r'''
import sys, time
from pymemcache.client.base import Client
c = Client(("127.0.0.1", int(sys.argv[1])))
c.set("item:1", b"x" * 32, noreply=False)
n = int(sys.argv[2])
t0 = time.process_time()
for i in range(n):
    c.get("item:1")
print(time.process_time() - t0)
'''

COUNTED = ("cmd_get", "cmd_set", "cmd_touch", "cmd_flush", "delete_hits", "delete_misses", "incr_hits",
           "incr_misses", "decr_hits", "decr_misses")


def stats(port):
    """The server's command counters (`stats` over a plain socket; this connection's own command is one
    `stats`, which none of COUNTED counts)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(65536)
    out = {}
    for line in buf.decode().splitlines():
        p = line.split()
        if len(p) == 3 and p[0] == "STAT":
            out[p[1]] = p[2]
    return sum(int(out.get(k, 0)) for k in COUNTED)


def cpu_of(args, env):
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{args[0]} exited with {status}")
    return ru.ru_utime + ru.ru_stime, out


def stored(db, n):
    """Waits until the collector stored n transactions (the traced run's is the last), so that its work
    overlaps no run; False when it did not come within 20 s (counted and printed)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if count_transactions(db) >= n:
            return True
        time.sleep(0.05)
    return False


def main():
    with tempfile.TemporaryDirectory(prefix="txray-bench-") as tmp:
        port = free_port()
        user = ["-u", "root"] if os.geteuid() == 0 else []
        server = subprocess.Popen([MEMCACHED, "-p", str(port), "-l", "127.0.0.1", "-U", "0", "-m", "256", *user],
                                  env=bare_env())
        try:
            wait_port(port)
            clients = [
                ("memcslap -t get", [MEMCSLAP, f"--servers=127.0.0.1:{port}", "-t", "get", "-c", "1",
                                     "-e", str(N)], False),
                ("pymemcache get loop", [PYTHON, "-c", PY_LOOP, str(port), str(N // 5)], True),
            ]
            results = {}
            with Collector(tmp) as col:
                runs = lost = 0
                for r in range(ROUNDS):
                    for label, args, own_figure in clients:
                        for traced in ((False, True) if r % 2 == 0 else (True, False)):
                            env = agent_env(col.endpoint, app="bench-memcached", mode="process") if traced else bare_env()
                            before = stats(port)
                            cpu, out = cpu_of(args, env)
                            n = stats(port) - before
                            if own_figure:
                                cpu = float(out.split()[-1])
                                n -= 1  # the loop's set is outside its timing
                            results.setdefault((label, traced), []).append(cpu * 1e9 / n)
                            if traced:
                                runs += 1
                                if not stored(col.db, runs):
                                    lost += 1
                                    runs = count_transactions(col.db)
        finally:
            server.terminate()
            server.wait()
    print(f"memcached commands, CPU ns per command of the client process (median of {ROUNDS} interleaved rounds; "
          f"memcslap -c 1 -e {N}, pymemcache {N // 5} gets; agent: process mode)")
    print(f"{'client':<26}{'bare':>10}{'agent':>10}{'added':>10}")
    for label, _, _ in clients:
        bare = statistics.median(results[(label, False)])
        agent = statistics.median(results[(label, True)])
        print(f"{label:<26}{bare:>10.0f}{agent:>10.0f}{agent - bare:>10.0f}")
    print(f"traced runs whose transaction did not reach the store within 20 s: {lost} of {ROUNDS * len(clients)}")


if __name__ == "__main__":
    main()
