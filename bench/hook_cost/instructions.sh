#!/usr/bin/env bash
# What the agent adds per read()/write() call in instructions, which a shared machine's load does not
# change (run.sh measures CPU time, which it does). The hook_cost benchmark runs under valgrind's
# callgrind for exactly N1 and N2 iterations (HOOK_COST_ITERATIONS), bare and with the agent preloaded;
# (instructions at N2 - instructions at N1) / (2 calls x (N2 - N1)) is one call's cost free of start-up,
# and agent minus bare is what the hooks add per call (write and read averaged). System calls are one
# instruction each to callgrind: the kernel's share is in run.sh's figures only.
# Usage: bench/hook_cost/instructions.sh BUILD_DIR   (env: N1=2000 N2=12000)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
BIN=$BUILD/bin/txray-bench-hook-cost
AGENT=$BUILD/lib/libtxray-agent.so
N1=${N1:-2000}
N2=${N2:-12000}
command -v valgrind >/dev/null || { echo "instructions: valgrind is missing" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

ir() {  # $1 = bare|agent, $2 = benchmark, $3 = iterations; prints the program's instructions
  local env=(env -u LD_PRELOAD HOOK_COST_ITERATIONS="$3")
  [ "$1" = agent ] && env+=(LD_PRELOAD="$AGENT" TXRAY_COLLECTOR="ipc://$WORK/nobody.sock")
  "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg" "$BIN" --benchmark_filter="$2" \
    >/dev/null 2>"$WORK/vg.err"
  awk '/^(summary|totals):/ {print $2; exit}' "$WORK/cg"
}

echo "hook_cost instructions: per write()/read() call, callgrind, ($N2 - $N1) iterations of write+read"
for bm in tcp_loopback unix_pair; do
  b=$(( ($(ir bare $bm $N2) - $(ir bare $bm $N1)) ))
  a=$(( ($(ir agent $bm $N2) - $(ir agent $bm $N1)) ))
  awk -v b=$b -v a=$a -v n=$((2 * (N2 - N1))) -v bm=$bm 'BEGIN {
    printf "  %-14s bare %.1f, agent %.1f instructions per call: the agent adds %.1f\n", bm, b / n, a / n, (a - b) / n }'
done
