#!/usr/bin/env python3
"""Cost of one MySQL/MariaDB statement under the agent, seen through the libmariadb hooks and through the
wire parser (agent/protocols/mysql), in one run.

Starts a throw-away MariaDB (tests/e2e/mariadbserver.py) and a collector, then runs lookup.py ROUNDS
times per variant, interleaved: MySQLdb (C over libmariadb: hooked) and PyMySQL (its own protocol:
wire-parsed), each bare and under the agent in process mode (one transaction; past the step limit the
statements fold into the summary line). The figure is the client process's CPU over its loop of
lookups (process_time: every thread, the agent's transport thread included; start-up and connect not)
per statement: the medians, and what the agent adds, side by side. The two drivers' bare costs differ (Python vs C per row); compare what each adds.

    bench/wire_mysql/run.py BUILD_DIR        (env: N=5000 ROUNDS=7)
"""
import os
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


if __name__ == "__main__":
    main()
