#!/usr/bin/env bash
# What the agent adds per write()/read() call on a connected loopback socket (target: < 50 ns).
# The same Google Benchmark binary runs bare and with the agent preloaded, alternating, ROUNDS times;
# medians of the CPU time per iteration (one write + one read) are compared. CPU time, not wall time:
# on this shared 2-core machine wall time mostly measures the neighbours.
# Usage: bench/hook_cost/run.sh BUILD_DIR   (env: ROUNDS, default 7)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
BIN=$BUILD/bin/txray-bench-hook-cost
AGENT=$BUILD/lib/libtxray-agent.so
ROUNDS=${ROUNDS:-7}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for r in $(seq "$ROUNDS"); do
  "$BIN" --benchmark_format=json >"$WORK/bare.$r.json" 2>/dev/null
  LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/nobody.sock" "$BIN" --benchmark_format=json \
    >"$WORK/agent.$r.json" 2>/dev/null
done

/usr/bin/python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def runs(kind):
    out = {}
    for r in range(1, rounds + 1):
        for b in json.load(open(f"{work}/{kind}.{r}.json"))["benchmarks"]:
            out.setdefault(b["name"].split("/")[0][3:], []).append(b["cpu_time"])  # ns per iteration (2 calls)
    return out
bare, agent = runs("bare"), runs("agent")
print(f"hook_cost: write()+read() of 64 B per iteration, CPU ns, {rounds} rounds alternating bare/agent")
print(f"  {'socket':<16}{'bare ns/iter':>14}{'agent ns/iter':>15}{'added ns/call':>15}   (target < 50)")
for name in bare:
    b, a = statistics.median(bare[name]), statistics.median(agent[name])
    print(f"  {name:<16}{b:>14.0f}{a:>15.0f}{(a - b) / 2:>15.1f}")
for name in bare:
    print(f"  {name} bare runs:  " + " ".join(f"{x:.0f}" for x in bare[name]))
    print(f"  {name} agent runs: " + " ".join(f"{x:.0f}" for x in agent[name]))
PY
