#!/usr/bin/env python3
"""Cost of one MySQL/MariaDB statement under the agent, seen through the libmariadb hooks and through the
wire parser (agent/protocols/mysql), in one run.

Starts a throw-away MariaDB (tests/e2e/mariadbserver.py) and a collector, then runs lookup.py ROUNDS
times per variant, interleaved: MySQLdb (C over libmariadb: hooked) and PyMySQL (its own protocol:
wire-parsed), each bare and under the agent in process mode (one transaction; past the step limit the
statements fold into the summary line). The figure is the client process's CPU over its loop of
lookups (process_time: every thread, the agent's transport thread included; start-up and connect not)
per statement: the medians, and what the agent adds, side by side. The two drivers' bare costs differ (Python vs C per row); compare what each adds.

Then, unless CALLGRIND=0, the instructions per statement under valgrind's callgrind, which this shared
machine's load does not move: each driver bare and under the agent, the main thread only, runs of 200
and 1,200 lookups subtracted (start-up, connect and exit cancel out). The agent runs in process mode
with TXRAY_MAX_STEPS=50 (both runs fold their statements into the summary, so the exit's encoding is
the same) and TXRAY_CPU_SAMPLES=0 (the sampler's cost follows the run's CPU time, not its statements);
PYTHONHASHSEED=0 keeps Python's own work the same from run to run.

    bench/wire_mysql/run.py BUILD_DIR        (env: N=5000 ROUNDS=7 CALLGRIND=1)
"""
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
BUILD = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("TXRAY_BUILD_DIR", BUILD)
from mariadbserver import MariaDbServer  # noqa: E402
from txraytest import AGENT, PYTHON, Collector, agent_env, bare_env, wait_transactions  # noqa: E402

N = int(os.environ.get("N", "5000"))
ROUNDS = int(os.environ.get("ROUNDS", "7"))
CALLGRIND = os.environ.get("CALLGRIND", "1") != "0"
CG_RUNS = (200, 1200)


def cpu_of(args, env):
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True, timeout=600).stdout
    return float(out.split()[-1])


def main():
    import tempfile
    with MariaDbServer() as db, tempfile.TemporaryDirectory(prefix="txray-bench-") as tmp:
        values = ",".join(f"({i},'p{i}')" for i in range(1, 1001))
        db.sql(f"CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(32)); INSERT INTO people VALUES {values}")
        with Collector(tmp) as col:
            results = {}
            runs = 0
            for r in range(ROUNDS):
                for driver in ("mysqldb", "pymysql"):
                    for traced in (False, True):
                        env = agent_env(col.endpoint, app=f"bench-{driver}", mode="process") if traced else bare_env()
                        args = [PYTHON, os.path.join(HERE, "lookup.py"), driver, str(db.port), str(N)]
                        results.setdefault((driver, traced), []).append(cpu_of(args, env))
                        runs += traced
            wait_transactions(col.db, runs)
        print(f"MySQL primary-key lookup, CPU ns per statement of the client process (median of {ROUNDS} "
              f"interleaved rounds, {N} statements a run; agent: process mode)")
        print(f"{'client':<34}{'bare':>10}{'agent':>10}{'added':>10}")
        for driver, label in (("mysqldb", "MySQLdb / libmariadb (hooks)"), ("pymysql", "PyMySQL (wire parser)")):
            bare = statistics.median(results[(driver, False)])
            agent = statistics.median(results[(driver, True)])
            print(f"{label:<34}{bare:>10.0f}{agent:>10.0f}{agent - bare:>10.0f}")
        if CALLGRIND and shutil.which("valgrind"):
            print(f"callgrind: instructions per statement, main thread ({CG_RUNS[1]} - {CG_RUNS[0]} lookups)")
            print(f"{'client':<34}{'bare':>10}{'agent':>10}{'added':>10}")
            os.makedirs(os.path.join(tmp, "cg"), exist_ok=True)
            with Collector(os.path.join(tmp, "cg")) as col:
                for driver, label in (("mysqldb", "MySQLdb / libmariadb (hooks)"), ("pymysql", "PyMySQL (wire parser)")):
                    per = {}
                    for traced in (False, True):
                        env = (agent_env(col.endpoint, app=f"cg-{driver}", mode="process",
                                         extra={"TXRAY_MAX_STEPS": "50", "TXRAY_CPU_SAMPLES": "0"})
                               if traced else bare_env())
                        env["PYTHONHASHSEED"] = "0"
                        counts = [callgrind_main(tmp, driver, db.port, n, env) for n in CG_RUNS]
                        per[traced] = (counts[1] - counts[0]) / (CG_RUNS[1] - CG_RUNS[0])
                    print(f"{label:<34}{per[False]:>10.0f}{per[True]:>10.0f}{per[True] - per[False]:>10.0f}")
        elif CALLGRIND:
            print("callgrind: skipped (valgrind is not installed: apt-get install valgrind)")


def callgrind_main(tmp, driver, port, n, env):
    """Instructions of the main thread of one lookup.py run under callgrind."""
    out = os.path.join(tmp, f"cg.{driver}.{n}.{env.get('LD_PRELOAD') is not None}")
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
                    PYTHON, os.path.join(HERE, "lookup.py"), driver, str(port), str(n)],
                   env=env, check=True, capture_output=True, text=True, timeout=1800)
    with open(out + "-01") as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}-01")


if __name__ == "__main__":
    main()
