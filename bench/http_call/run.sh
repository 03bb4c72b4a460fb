#!/usr/bin/env bash
# Outbound HTTP call on loopback: a keep-alive client making GET calls to a local (bare) server, run
# bare and with the agent preloaded, alternating, ROUNDS times; prints the medians side by side and the
# cost the agent adds per call (HTTP_CALL row + traceparent insertion). A real collector receives the
# transactions. Usage: bench/http_call/run.sh BUILD_DIR   (env: CALLS, ROUNDS, BATCH)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
BIN=$BUILD/bin/txray-bench-http-call
AGENT=$BUILD/lib/libtxray-agent.so
CALLS=${CALLS:-20000}
ROUNDS=${ROUNDS:-7}
BATCH=${BATCH:-50}
WORK=$(mktemp -d)
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$BIN" --serve "$PORT" & SERVER=$!
"$BUILD/bin/txray" collect --listen "ipc://$WORK/c.sock" --db "$WORK/t.db" --status-interval 60 >"$WORK/collect.log" 2>&1 & COLLECTOR=$!
cleanup() { kill "$SERVER" "$COLLECTOR" 2>/dev/null || true; wait "$SERVER" "$COLLECTOR" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
sleep 0.5

bare=(); agent=()
for r in $(seq "$ROUNDS"); do
  bare+=("$("$BIN" --call "$PORT" "$CALLS" "$BATCH" | awk '{print $2}')")
  agent+=("$(LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/c.sock" TXRAY_APP=bench-http-call \
             "$BIN" --call "$PORT" "$CALLS" "$BATCH" | awk '{print $2}')")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mb=$(median "${bare[@]}"); ma=$(median "${agent[@]}")
echo "http_call: $CALLS keep-alive GET calls on loopback per run, $ROUNDS rounds, a transaction per $BATCH calls"
echo "  bare runs (ns/call):   ${bare[*]}"
echo "  agent runs (ns/call):  ${agent[*]}"
printf '  median bare %s ns/call, with agent %s ns/call, added %s ns/call (target < 3000)\n' \
  "$mb" "$ma" "$((ma - mb))"
