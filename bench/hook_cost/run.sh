#!/usr/bin/env bash
# What the agent adds per write()/read() call on a connected loopback socket (target: < 50 ns).
# The same Google Benchmark binary runs bare and with the agent preloaded, alternating, ROUNDS times,
# pinned to one CPU; each run repeats each benchmark 5 times and keeps its fastest repetition (other
# programs on the machine only ever add time), and the medians over the rounds are compared. CPU time,
# not wall time: on this shared 2-core machine wall time mostly measures the neighbours.
# Usage: bench/hook_cost/run.sh BUILD_DIR   (env: ROUNDS, default 7)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
BIN=$BUILD/bin/txray-bench-hook-cost
AGENT=$BUILD/lib/libtxray-agent.so
ROUNDS=${ROUNDS:-7}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then PIN=(taskset -c 1); fi
ARGS=(--benchmark_format=json --benchmark_repetitions=5)
for r in $(seq "$ROUNDS"); do
  "${PIN[@]}" "$BIN" "${ARGS[@]}" >"$WORK/bare.$r.json" 2>/dev/null
  LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/nobody.sock" "${PIN[@]}" "$BIN" "${ARGS[@]}" \
    >"$WORK/agent.$r.json" 2>/dev/null
done

/usr/bin/python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def runs(kind):
    out = {}
    for r in range(1, rounds + 1):
        best = {}
        for b in json.load(open(f"{work}/{kind}.{r}.json"))["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue  # aggregates (mean, median, stddev) are recomputed here
            name = b["name"].split("/")[0][3:]
            best[name] = min(best.get(name, float("inf")), b["cpu_time"])  # ns per iteration (2 calls)
        for name, v in best.items():
            out.setdefault(name, []).append(v)
    return out
bare, agent = runs("bare"), runs("agent")
print(f"hook_cost: write()+read() of 64 B per iteration, CPU ns (fastest of 5 repetitions per run), "
      f"{rounds} rounds alternating bare/agent")
print(f"  {'socket':<16}{'bare ns/iter':>14}{'agent ns/iter':>15}{'added ns/call':>15}   (target < 50)")
for name in bare:
    b, a = statistics.median(bare[name]), statistics.median(agent[name])
    print(f"  {name:<16}{b:>14.0f}{a:>15.0f}{(a - b) / 2:>15.1f}")
for name in bare:
    print(f"  {name} bare runs:  " + " ".join(f"{x:.0f}" for x in bare[name]))
    print(f"  {name} agent runs: " + " ".join(f"{x:.0f}" for x in agent[name]))
PY
