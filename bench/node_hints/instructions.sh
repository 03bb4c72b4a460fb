#!/usr/bin/env bash
# The cost of the Node.js runtime hints in instructions, which a shared machine's load does not change
# (bench/node_hints/run.sh measures time, which it does). bench/node_hints/server.js runs under
# valgrind's callgrind, bare or under the agent with or without the shim; after WARMUP requests (V8 has
# compiled the hot code by then) the counters are zeroed, then REQUESTS requests are sent one after
# another over one keep-alive connection, and the instructions the event-loop thread executed are
# divided by REQUESTS. V8's compiler threads are separate threads and not counted. The agent's collector
# is absent (as in run.sh, its cost is the same with and without the shim).
# Usage: bench/node_hints/instructions.sh BUILD_DIR [VARIANT...]   (variants: compute call callawait;
#        default: call callawait; env: MODES="noshim shim" WARMUP=2000 REQUESTS=600 SHIM=path NODE=node)
# Slow: each run takes ~3-10 minutes (valgrind executes ~50x slower).
set -euo pipefail
BUILD=$(realpath "${1:-build}")
shift || true
VARIANTS=${*:-call callawait}
HERE=$(cd "$(dirname "$0")" && pwd)
MODES=${MODES:-noshim shim}
WARMUP=${WARMUP:-2000}
REQUESTS=${REQUESTS:-600}
SHIM=${SHIM:-$BUILD/lib/txray/runtimes/node/txray-hints.js}
NODE=$(command -v "${NODE:-node}")
AGENT=$BUILD/lib/libtxray-agent.so
for tool in valgrind callgrind_control python3; do
  command -v $tool >/dev/null || { echo "instructions: $tool is missing (apt-get install valgrind)" >&2; exit 1; }
done
WORK=$(mktemp -d)
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

wait_line() {  # $1 = file; prints the port of its "listening on ... N" line
  for _ in $(seq 3000); do
    local p; p=$(awk '/listening on/ {print $NF}' "$1" 2>/dev/null)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  echo "instructions: no 'listening on' in $1" >&2; cat "$1" >&2; return 1
}

cat >"$WORK/client.py" <<'PY'
import http.client, sys
port, n, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
for i in range(n):
    c.request("GET", f"/{tag}{i}")
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY

"$BUILD/bin/txray-burner" serve --listen 127.0.0.1:0 --backend none --burn-us 0 >"$WORK/backend.out" 2>&1 &
PIDS="$!"
BPORT=$(wait_line "$WORK/backend.out")

count() {  # $1 = mode, $2 = variant; prints instructions per request of the event-loop thread
  local env=(env -u LD_PRELOAD -u NODE_OPTIONS)
  case $1 in
    bare) ;;
    noshim) env+=(LD_PRELOAD=$AGENT TXRAY_COLLECTOR=ipc://$WORK/none TXRAY_RUNTIME_HINTS=0) ;;
    shim) env+=(LD_PRELOAD=$AGENT TXRAY_COLLECTOR=ipc://$WORK/none "NODE_OPTIONS=--require $SHIM") ;;
  esac
  local args=("$HERE/server.js" "$2")
  [ "$2" != compute ] && args+=("$BPORT")
  rm -f "$WORK"/cg.out* "$WORK/server.out"
  "${env[@]}" valgrind --tool=callgrind --separate-threads=yes --smc-check=all-non-file \
    --callgrind-out-file="$WORK/cg.out" "$NODE" "${args[@]}" >"$WORK/server.out" 2>"$WORK/server.err" &
  local pid=$!
  local port; port=$(wait_line "$WORK/server.out")
  python3 "$WORK/client.py" "$port" "$WARMUP" w
  callgrind_control -z $pid >/dev/null 2>&1
  python3 "$WORK/client.py" "$port" "$REQUESTS" m
  callgrind_control -d $pid >/dev/null 2>&1
  sleep 1
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  # the dump's file of thread 1 (the event loop); its "totals:" line is the instructions since the zeroing
  local f; f=$(ls "$WORK"/cg.out.1-01 2>/dev/null || true)
  [ -n "$f" ] || { echo "instructions: no callgrind dump" >&2; return 1; }
  local ir; ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
  echo $((ir / REQUESTS))
}

echo "node_hints instructions: $("$NODE" --version) under callgrind, $WARMUP warm-up requests, then $REQUESTS counted, one connection"
for V in $VARIANTS; do
  declare -A ir=()
  for m in $MODES; do ir[$m]=$(count "$m" "$V"); done
  line="  $V:"
  for m in $MODES; do line+=" $m ${ir[$m]}"; done
  if [ -n "${ir[noshim]:-}" ] && [ -n "${ir[shim]:-}" ]; then
    d=$((ir[shim] - ir[noshim]))
    line+="  -> shim - noshim: $d instructions per request ($(awk -v d=$d -v b=${ir[noshim]} 'BEGIN {printf "%+.1f%%", 100*d/b}'))"
  fi
  echo "$line"
  unset ir
done
