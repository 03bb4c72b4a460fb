#!/usr/bin/env bash
# Cost of one SQL step: an in-memory SQLite primary-key lookup (prepared once; bind + step + reset per
# statement), run bare and under the agent, alternating, ROUNDS times; prints the medians side by side and
# what the agent adds per statement. Two agent runs per round:
#   process: TXRAY_MODE=process, the whole run is one transaction (past the step limit the statements
#            are folded into per-fingerprint summaries: the steady state of a long batch job);
#   rows:    a transaction per BATCH statements (C API), so that every statement is a full profile row
#            (wall and thread-CPU clocks read, text, binds, fingerprint, totals).
# A real collector receives the transactions. Usage: bench/sql_step/run.sh BUILD_DIR  (env: N, ROUNDS, BATCH)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
BIN=$BUILD/bin/txray-bench-sql-step
AGENT=$BUILD/lib/libtxray-agent.so
N=${N:-200000}
ROUNDS=${ROUNDS:-7}
BATCH=${BATCH:-500}
WORK=$(mktemp -d)

"$BUILD/bin/txray" collect --listen "ipc://$WORK/c.sock" --db "$WORK/t.db" --status-interval 60 >"$WORK/collect.log" 2>&1 & COLLECTOR=$!
cleanup() { kill "$COLLECTOR" 2>/dev/null || true; wait "$COLLECTOR" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
sleep 0.5

# Thread-CPU ns per statement (field 3): on this shared 2-core machine wall time mostly measures the
# neighbours; the wall-clock figure is printed by the binary too (field 2).
run() { "$@" | awk '/^ns_per_stmt/ {print $3}'; }
bare=(); process=(); rows=()
for r in $(seq "$ROUNDS"); do
  bare+=("$(run "$BIN" "$N" 0)")
  process+=("$(LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/c.sock" TXRAY_MODE=process TXRAY_APP=bench-sql-step \
               run "$BIN" "$N" 0)")
  rows+=("$(LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/c.sock" TXRAY_APP=bench-sql-step run "$BIN" "$N" "$BATCH")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mb=$(median "${bare[@]}"); mp=$(median "${process[@]}"); mr=$(median "${rows[@]}")
echo "sql_step: $N SQLite primary-key lookups (bind + step + reset) per run, $ROUNDS rounds, alternating"
echo "  bare (CPU ns/stmt):                    ${bare[*]}"
echo "  agent, process mode (CPU ns/stmt):     ${process[*]}"
echo "  agent, a row per stmt (CPU ns/stmt):   ${rows[*]}"
printf '  median bare %s ns/stmt\n' "$mb"
printf '  median agent, process mode (folded into the summary past the step limit) %s ns/stmt, added %s ns (target < 1000)\n' \
  "$mp" "$(awk -v a="$mp" -v b="$mb" 'BEGIN {printf "%.0f", a - b}')"
printf '  median agent, every statement a profile row (transaction per %s) %s ns/stmt, added %s ns (target < 1000)\n' \
  "$BATCH" "$mr" "$(awk -v a="$mr" -v b="$mb" 'BEGIN {printf "%.0f", a - b}')"
