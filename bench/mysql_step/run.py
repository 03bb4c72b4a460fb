#!/usr/bin/env python3
"""Cost of one MySQL/MariaDB statement under the agent (issue 16): bare vs agent in one run.

Starts a throw-away MariaDB server (tests/e2e/mariadbserver.py) and a collector, then runs
txray-bench-mysql-step ROUNDS times per variant, alternating bare / agent in process mode (one transaction:
past the step limit statements fold into the summary) / agent with a transaction per BATCH statements
(every statement a full profile row), for prepared statements and text queries; prints the medians of
thread-CPU ns per statement (the client's own work: on this shared machine wall time mostly measures the
neighbours and the server) and wall ns, what the agent adds and the ratio. Then, unless CALLGRIND=0,
counts the instructions of the measured loop (run_statements) under valgrind's callgrind, bare and with
the agent (a row per statement): machine load does not move those.

    bench/mysql_step/run.py BUILD_DIR        (env: N=10000 ROUNDS=5 BATCH=500 CG_N=2000 CALLGRIND=1)
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
from mariadbserver import MariaDbServer  # noqa: E402

BUILD = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("TXRAY_BUILD_DIR", BUILD)
BIN = os.path.join(BUILD, "bin", "txray-bench-mysql-step")
AGENT = os.path.join(BUILD, "lib", "libtxray-agent.so")
TXRAY = os.path.join(BUILD, "bin", "txray")
N = int(os.environ.get("N", "10000"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
BATCH = int(os.environ.get("BATCH", "500"))
CG_N = int(os.environ.get("CG_N", "2000"))
CALLGRIND = os.environ.get("CALLGRIND", "1") != "0"


def main():
    work = tempfile.mkdtemp(prefix="txray-bench-mysql-")
    endpoint = f"ipc://{work}/c.sock"
    collector = subprocess.Popen([TXRAY, "collect", "--listen", endpoint, "--db", f"{work}/t.db",
                                  "--status-interval", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = MariaDbServer()
    try:
        server.start()
        target = ["127.0.0.1", str(server.port), "root", server.database]
        bare_env = {k: v for k, v in os.environ.items() if not k.startswith("TXRAY_") and k != "LD_PRELOAD"}
        agent_env = dict(bare_env, LD_PRELOAD=AGENT, TXRAY_COLLECTOR=endpoint, TXRAY_APP="bench-mysql-step")

        def run(env, batch, kind, n=N, prefix=()):
            out = subprocess.run([*prefix, BIN, *target, str(n), str(batch), kind], env=env, check=True,
                                 capture_output=True, text=True, timeout=900)
            m = re.search(r"^ns_per_stmt (\d+) (\d+)", out.stdout, re.M)
            return int(m.group(1)), int(m.group(2))

        run(bare_env, 0, "prepared", n=200)  # fills the table
        print(f"mysql_step: {N} MariaDB primary-key lookups per run over TCP loopback, {ROUNDS} rounds, alternating")
        for kind in ("prepared", "text"):
            res = {"bare": [], "process": [], "rows": []}
            for _ in range(ROUNDS):
                res["bare"].append(run(bare_env, 0, kind))
                res["process"].append(run(dict(agent_env, TXRAY_MODE="process"), 0, kind))
                res["rows"].append(run(agent_env, BATCH, kind))
            med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in res.items()}
            b_wall, b_cpu = med["bare"]
            print(f"  {kind}:")
            print(f"    bare CPU ns/stmt {[c for _, c in res['bare']]}  median {b_cpu:.0f}  (wall median {b_wall:.0f})")
            for k, label in (("process", "agent, process mode (folded past the step limit)"),
                             ("rows", f"agent, every statement a profile row (transaction per {BATCH})")):
                w, c = med[k]
                print(f"    {label}: CPU ns/stmt {[x for _, x in res[k]]}  median {c:.0f}, added {c - b_cpu:+.0f} ns "
                      f"(x{c / b_cpu:.3f}); wall median {w:.0f}, added {w - b_wall:+.0f} ns (x{w / b_wall:.3f})")
        if CALLGRIND and shutil.which("valgrind"):
            print(f"  callgrind: instructions of the measured loop per statement ({CG_N} statements, main thread)")
            for kind in ("prepared", "text"):
                counts = {}
                for label, env, batch in (("bare", bare_env, 0), ("agent", agent_env, BATCH)):
                    out = f"{work}/cg.{kind}.{label}"
                    run(env, batch, kind, n=CG_N, prefix=("valgrind", "--tool=callgrind", "--separate-threads=no",
                                                         "--toggle-collect=*run_statements*",
                                                         f"--callgrind-out-file={out}"))
                    counts[label] = instructions(out) / (CG_N + 200)  # + the warm-up, also in run_statements
                b, a = counts["bare"], counts["agent"]
                print(f"    {kind}: bare {b:,.0f}, agent {a:,.0f}: added {a - b:+,.0f} instructions (x{a / b:.3f})")
        elif CALLGRIND:
            print("  callgrind: skipped (valgrind is not installed: apt-get install valgrind)")
    finally:
        server.stop()
        collector.terminate()
        collector.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


def instructions(path):
    """Ir total of a callgrind output file (the collected part only)."""
    with open(path) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


if __name__ == "__main__":
    main()
