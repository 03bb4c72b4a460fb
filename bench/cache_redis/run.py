#!/usr/bin/env python3
"""What the agent adds to a Redis command parsed on the wire (agent/protocols/redis), in one run.

Starts a throw-away redis-server (loopback, no persistence) and a collector, then runs each client ROUNDS
times, bare and under the agent in process mode (one transaction per run: its first 1,000 rows kept, the
rest folded into summary lines), interleaved (bare then agent, the next round agent then bare; a traced
run's transaction is stored before the next run starts, so the collector's work overlaps no run):
- redis-benchmark -P 16 -t set,get (hiredis-style C, 16 commands per write),
- redis-benchmark -P 1 -t set,get (one command per write and read),
- a redis-py loop of GETs (Python, one command per write and read; its loop only, start-up left out).
The figure is the client process's CPU (user + system, every thread: the agent's transport thread too) per
command the server counted (INFO commandstats after CONFIG RESETSTAT): the medians, and what the agent
adds, side by side. The server is not traced.

    bench/cache_redis/run.py BUILD_DIR        (env: N=200000 ROUNDS=11)
"""
import os
import re
import shutil
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

N = int(os.environ.get("N", "200000"))
ROUNDS = int(os.environ.get("ROUNDS", "11"))
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
REDIS_BENCHMARK = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"

PY_LOOP = r'''
import sys, time
import redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
r.set("item:1", "x" * 32)
n = int(sys.argv[2])
t0 = time.process_time()
for i in range(n):
    r.get("item:1")
print(time.process_time() - t0)
'''


def cli(port, *args):
    return subprocess.run([REDIS_CLI, "-p", str(port), *args], env=bare_env(), check=True, capture_output=True,
                          text=True, timeout=60).stdout


def commands(port):
    total = 0
    for line in cli(port, "INFO", "commandstats").splitlines():
        m = re.match(r"cmdstat_([^:]+):calls=(\d+),", line)
        if m and m.group(1) not in ("info", "config|resetstat"):
            total += int(m.group(2))
    return total


def cpu_of(args, env):
    """(CPU seconds of the process: user + system, its own figure when it prints one, its stdout)."""
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError(f"{args[0]} exited with {p.returncode}")
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
        server = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", tmp], env=bare_env(), stdout=subprocess.DEVNULL)
        try:
            wait_port(port)
            bench = [REDIS_BENCHMARK, "-p", str(port), "-c", "4", "-r", "100000", "-t", "set,get", "-q"]
            clients = [
                ("redis-benchmark -P 16", bench + ["-n", str(N), "-P", "16"], False),
                ("redis-benchmark -P 1", bench + ["-n", str(N // 4), "-P", "1"], False),
                ("redis-py GET loop", [PYTHON, "-c", PY_LOOP, str(port), str(N // 10)], True),
            ]
            results = {}
            with Collector(tmp) as col:
                runs = lost = 0
                for r in range(ROUNDS):
                    for label, args, own_figure in clients:
                        for traced in ((False, True) if r % 2 == 0 else (True, False)):
                            env = agent_env(col.endpoint, app="bench-redis", mode="process") if traced else bare_env()
                            cli(port, "CONFIG", "RESETSTAT")
                            cpu, out = cpu_of(args, env)
                            if own_figure:
                                cpu = float(out.split()[-1])
                            n = commands(port) - (1 if own_figure else 0)  # the loop's SET is outside its timing
                            results.setdefault((label, traced), []).append(cpu * 1e9 / n)
                            if traced:
                                runs += 1
                                if not stored(col.db, runs):
                                    lost += 1
                                    runs = count_transactions(col.db)
        finally:
            server.terminate()
            server.wait()
    print(f"Redis commands, CPU ns per command of the client process (median of {ROUNDS} interleaved rounds; "
          f"redis-benchmark -c 4 -n {N} (-P 1: {N // 4}) -t set,get, redis-py {N // 10} GETs; agent: process mode)")
    print(f"{'client':<26}{'bare':>10}{'agent':>10}{'added':>10}")
    for label, _, _ in clients:
        bare = statistics.median(results[(label, False)])
        agent = statistics.median(results[(label, True)])
        print(f"{label:<26}{bare:>10.0f}{agent:>10.0f}{agent - bare:>10.0f}")
    print(f"traced runs whose transaction did not reach the store within 20 s: {lost} of {ROUNDS * len(clients)}")


if __name__ == "__main__":
    main()
