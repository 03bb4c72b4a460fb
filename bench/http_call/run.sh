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

bare=(); agent=(); bare_cpu=(); agent_cpu=()
for r in $(seq "$ROUNDS"); do
  read -r _ w _ c < <("$BIN" --call "$PORT" "$CALLS" "$BATCH")
  bare+=("$w"); bare_cpu+=("$c")
  read -r _ w _ c < <(LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/c.sock" TXRAY_APP=bench-http-call \
                      "$BIN" --call "$PORT" "$CALLS" "$BATCH")
  agent+=("$w"); agent_cpu+=("$c")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
mb=$(median "${bare[@]}"); ma=$(median "${agent[@]}")
cb=$(median "${bare_cpu[@]}"); ca=$(median "${agent_cpu[@]}")
echo "http_call: $CALLS keep-alive GET calls on loopback per run, $ROUNDS rounds alternating, a transaction per $BATCH calls"
echo "  wall ns/call   bare:  ${bare[*]}"
echo "  wall ns/call   agent: ${agent[*]}"
echo "  thread CPU ns/call bare:  ${bare_cpu[*]}"
echo "  thread CPU ns/call agent: ${agent_cpu[*]}"
printf '  median wall:       bare %6s  agent %6s  added %6s ns/call (target < 3000)\n' "$mb" "$ma" "$((ma - mb))"
printf '  median thread CPU: bare %6s  agent %6s  added %6s ns/call\n' "$cb" "$ca" "$((ca - cb))"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
