#!/usr/bin/env python3
"""Cost of one PostgreSQL statement under the agent, seen through the libpq hooks and through the wire
parser (agent/protocols/pg), in one run.

Starts a throw-away PostgreSQL 15 (tests/e2e/pgserver.py) and a collector, then runs txray-bench-wire-pg
ROUNDS times per variant, interleaved: for each client (libpq: PQexecPrepared, hooked; wire: the same
messages written by hand, parsed) bare / agent in process mode (one transaction: past the step limit
statements fold into the summary) / agent with a transaction per BATCH statements (every statement a
full profile row). Prints the medians of thread-CPU ns per statement (the client's own work: on this
shared machine wall time mostly measures the neighbours and the server) and of wall ns, what the agent
adds, side by side. Then, unless CALLGRIND=0, counts the instructions of the measured loop
(run_statements) under valgrind's callgrind, bare and with the agent (a row per statement).

    bench/wire_pg/run.py BUILD_DIR        (env: N=10000 ROUNDS=5 BATCH=500 CG_N=2000 CALLGRIND=1)
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
from pgserver import PgServer  # noqa: E402

BUILD = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("TXRAY_BUILD_DIR", BUILD)
BIN = os.path.join(BUILD, "bin", "txray-bench-wire-pg")
AGENT = os.path.join(BUILD, "lib", "libtxray-agent.so")
TXRAY = os.path.join(BUILD, "bin", "txray")
N = int(os.environ.get("N", "10000"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
BATCH = int(os.environ.get("BATCH", "500"))
CG_N = int(os.environ.get("CG_N", "2000"))
CALLGRIND = os.environ.get("CALLGRIND", "1") != "0"
CLIENTS = ("libpq", "wire")


def main():
    work = tempfile.mkdtemp(prefix="txray-bench-wire-pg-")
    endpoint = f"ipc://{work}/c.sock"
    collector = subprocess.Popen([TXRAY, "collect", "--listen", endpoint, "--db", f"{work}/t.db",
                                  "--status-interval", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = PgServer()
    try:
        server.start()
        target = ["127.0.0.1", str(server.port), server.user, server.database]
        bare_env = {k: v for k, v in os.environ.items() if not k.startswith("TXRAY_") and k != "LD_PRELOAD"}
        agent_env = dict(bare_env, LD_PRELOAD=AGENT, TXRAY_COLLECTOR=endpoint, TXRAY_APP="bench-wire-pg")
        variants = (("bare", bare_env, 0), ("process", dict(agent_env, TXRAY_MODE="process"), 0),
                    ("rows", agent_env, BATCH))

        def run(env, batch, client, n=N, prefix=()):
            out = subprocess.run([*prefix, BIN, *target, str(n), str(batch), client], env=env, check=True,
                                 capture_output=True, text=True, timeout=900)
            m = re.search(r"^ns_per_stmt (\d+) (\d+)", out.stdout, re.M)
            return int(m.group(1)), int(m.group(2))

        run(bare_env, 0, "libpq", n=200)  # makes and fills the table
        print(f"wire_pg: {N} PostgreSQL primary-key lookups (prepared) per run over TCP loopback, {ROUNDS} rounds, "
              "interleaved")
        res = {(c, v): [] for c in CLIENTS for v, _, _ in variants}
        for _ in range(ROUNDS):
            for c in CLIENTS:
                for v, env, batch in variants:
                    res[(c, v)].append(run(env, batch, c))
        med = {k: (statistics.median(w for w, _ in r), statistics.median(x for _, x in r)) for k, r in res.items()}
        print(f"  {'CPU ns/stmt (median)':<54}{'libpq + hooks':>16}{'wire + parser':>16}")
        for v, label in (("bare", "bare"), ("process", "agent, process mode (folded past the step limit)"),
                         ("rows", f"agent, every statement a row (tx per {BATCH})")):
            cells = []
            for c in CLIENTS:
                w, x = med[(c, v)]
                cells.append(f"{x:.0f}" if v == "bare" else f"{x:.0f} ({x - med[(c, 'bare')][1]:+.0f})")
            print(f"  {label:<54}{cells[0]:>16}{cells[1]:>16}")
        for c in CLIENTS:
            for v, _, _ in variants:
                print(f"    {c} {v}: CPU ns/stmt {[x for _, x in res[(c, v)]]}, wall median {med[(c, v)][0]:.0f}")
        if CALLGRIND and shutil.which("valgrind"):
            print(f"  callgrind: instructions of the measured loop per statement ({CG_N} statements, main thread)")
            for c in CLIENTS:
                counts = {}
                for label, env, batch in (("bare", bare_env, 0), ("agent", agent_env, BATCH)):
                    out = f"{work}/cg.{c}.{label}"
                    run(env, batch, c, n=CG_N, prefix=("valgrind", "--tool=callgrind", "--separate-threads=no",
                                                      "--toggle-collect=*run_statements*",
                                                      f"--callgrind-out-file={out}"))
                    counts[label] = instructions(out) / (CG_N + 200)  # + the warm-up, also in run_statements
                b, a = counts["bare"], counts["agent"]
                print(f"    {c}: bare {b:,.0f}, agent {a:,.0f}: added {a - b:+,.0f} instructions (x{a / b:.3f})")
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
