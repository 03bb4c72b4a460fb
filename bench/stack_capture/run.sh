#!/usr/bin/env bash
# Cost of one captured stack (issue 11), in one run: a SQLite INSERT under the agent, called from DEPTH
# frames of the program, as
#   ok:          a successful quick step (a bare row: no stack),
#   fail, off:   a failing step (SQLITE_CONSTRAINT) with TXRAY_STACKS=0,
#   fail, on:    the same failing step with its stack taken (libunwind, <= 32 frames kept),
# alternating, ROUNDS times; prints the medians of thread-CPU ns per statement and the difference
# on - off = what one captured stack costs the calling thread (symbolizing happens later, on the agent's
# own thread, and is not in it). A real collector receives the transactions.
# Usage: bench/stack_capture/run.sh BUILD_DIR   (env: N, ROUNDS, DEPTH, BATCH)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
BIN=$BUILD/bin/txray-bench-stack-capture
AGENT=$BUILD/lib/libtxray-agent.so
N=${N:-20000}
ROUNDS=${ROUNDS:-7}
DEPTH=${DEPTH:-20}
BATCH=${BATCH:-500}
WORK=$(mktemp -d)

"$BUILD/bin/txray" collect --listen "ipc://$WORK/c.sock" --db "$WORK/t.db" --status-interval 60 >"$WORK/collect.log" 2>&1 & COLLECTOR=$!
cleanup() { kill "$COLLECTOR" 2>/dev/null || true; wait "$COLLECTOR" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
sleep 0.5

run() { env LD_PRELOAD="$AGENT" TXRAY_COLLECTOR="ipc://$WORK/c.sock" TXRAY_APP=bench-stack-capture "$@" \
          "$BIN" "$N" "$MODE" "$DEPTH" "$BATCH" | awk '/^ns_per_stmt/ {print $3}'; }
ok=(); off=(); on=()
for r in $(seq "$ROUNDS"); do
  ok+=("$(MODE=ok run)")
  off+=("$(MODE=fail run TXRAY_STACKS=0)")
  on+=("$(MODE=fail run TXRAY_STACKS=1)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mo=$(median "${ok[@]}"); mf=$(median "${off[@]}"); mn=$(median "${on[@]}")
frames=$(/usr/bin/python3 - "$WORK/t.db" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
r = con.execute("SELECT avg(n) FROM (SELECT count(*) AS n FROM step_frames GROUP BY tx_id, step_no)").fetchone()[0]
print(f"{r:.1f}" if r else "?")
PY
)
echo "stack_capture: $N SQLite INSERTs per run from $DEPTH frames deep, a row each, $ROUNDS rounds, alternating"
echo "  ok step, no stack (CPU ns/stmt):          ${ok[*]}"
echo "  failed step, TXRAY_STACKS=0 (CPU ns/stmt): ${off[*]}"
echo "  failed step, stack taken (CPU ns/stmt):    ${on[*]}"
printf '  median bare step (ok, no stack)     %s ns\n' "$mo"
printf '  median failed step without stack    %s ns\n' "$mf"
printf '  median failed step with its stack   %s ns (%s frames kept per stack on average)\n' "$mn" "$frames"
printf '  one captured stack costs %s us (target: a few us)\n' "$(awk -v a="$mn" -v b="$mf" 'BEGIN {printf "%.2f", (a - b) / 1000}')"
