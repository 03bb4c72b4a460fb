#!/usr/bin/env bash
# The cost of the Node.js runtime hints (issue 10: the hints add <= 2 us per request). A small Node.js
# `http` server (bench/node_hints/server.js) at saturation, three ways, alternating in one run:
#   bare        node alone;
#   no shim     under the agent through `txray run` with TXRAY_RUNTIME_HINTS=0 (native rules only);
#   shim        under the agent through `txray run`, which adds the hint shim to NODE_OPTIONS
#               (agent/runtimes/node/txray-hints.js);
#   als         (only with MODES="bare noshim shim als") node alone with als_only.js: what the shim does
#               per request besides hinting (an AsyncLocalStorage store entered per request).
# Three servers: `compute` (per request WORK_ITERS iterations of arithmetic, then the answer), `call`
# (the same, then one outbound GET over a keep-alive http.Agent to a bare local back-end, txray-burner
# with no work, made synchronously in the handler) and `callawait` (that call made after an `await`). Load: txray-bench-loadgen, CONNS keep-alive connections for SECONDS_PER_RUN per run; its
# ZeroMQ PULL sink stands in for the collector. Node serves on one thread, so the time per request at
# saturation is 1/throughput: the "wall us/request" rows are 1e6/rps. The CPU time per request of the
# event-loop thread (where the hints run; /proc/PID/schedstat, ns) and of the whole process (all its
# threads: V8's, libuv's, the agent's) are printed too, since wall rates on this shared 2-core machine
# follow the neighbours' load. Each round runs the three side by side (every other round in reverse
# order); the added costs are medians of the per-round differences.
# Usage: bench/node_hints/run.sh BUILD_DIR   (env: ROUNDS=9 SECONDS_PER_RUN=2 CONNS=8 WORK_ITERS=2000
#        VARIANTS="compute call callawait" MODES="bare noshim shim" NODE=node)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
HERE=$(cd "$(dirname "$0")" && pwd)
TXRAY=$BUILD/bin/txray
LOADGEN=$BUILD/bin/txray-bench-loadgen
BURNER=$BUILD/bin/txray-burner
SHIM=$BUILD/lib/txray/runtimes/node/txray-hints.js
NODE=$(command -v "${NODE:-node}")
ROUNDS=${ROUNDS:-9}
SECS=${SECONDS_PER_RUN:-2}
CONNS=${CONNS:-8}
VARIANTS=${VARIANTS:-compute call callawait}
MODES=${MODES:-bare noshim shim}
for m in bare noshim shim; do
  [[ " $MODES " == *" $m "* ]] || { echo "node_hints: MODES must include bare, noshim and shim" >&2; exit 1; }
done
export WORK_ITERS=${WORK_ITERS:-2000}
for f in "$TXRAY" "$LOADGEN" "$BURNER" "$BUILD/lib/libtxray-agent.so"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "node_hints: $f is missing (build txray txray-agent txray-bench-loadgen txray-burner)" >&2; exit 1; }
done
[ -f "$SHIM" ] || { echo "node_hints: no Node.js shim at $SHIM (agent/runtimes/node is not built)" >&2; exit 1; }
WORK=$(mktemp -d)
SERVER_PID= BACKEND_PID=
cleanup() {
  for p in $SERVER_PID $BACKEND_PID; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

"$BURNER" serve --listen 127.0.0.1:0 --backend none --burn-us 0 >"$WORK/backend.out" & BACKEND_PID=$!
for _ in $(seq 100); do
  BPORT=$(awk '/listening on/ {print $NF}' "$WORK/backend.out"); [ -n "$BPORT" ] && break; sleep 0.05
done
[ -n "$BPORT" ] || { echo "back-end did not start" >&2; exit 1; }

start_server() {  # $1 = bare|noshim|shim, $2 = variant; sets SERVER_PID and PORT
  : >"$WORK/server.out"
  local args=("$HERE/server.js" "$2")
  [ "$2" != compute ] && args+=("$BPORT")
  case $1 in
    bare)   env -u LD_PRELOAD "$NODE" "${args[@]}" >"$WORK/server.out" 2>&1 & SERVER_PID=$! ;;
    als)    env -u LD_PRELOAD NODE_OPTIONS="--require $HERE/als_only.js" "$NODE" "${args[@]}" >"$WORK/server.out" 2>&1 & SERVER_PID=$! ;;
    noshim) TXRAY_RUNTIME_HINTS=0 "$TXRAY" run --collector "ipc://$WORK/sink.sock" --app bench-node -- \
              "$NODE" "${args[@]}" >"$WORK/server.out" 2>&1 & SERVER_PID=$! ;;
    shim)   TXRAY_RUNTIME_HINTS=1 "$TXRAY" run --collector "ipc://$WORK/sink.sock" --app bench-node -- \
              "$NODE" "${args[@]}" >"$WORK/server.out" 2>&1 & SERVER_PID=$! ;;
  esac
  for _ in $(seq 200); do
    PORT=$(awk '/listening on/ {print $NF}' "$WORK/server.out")
    [ -n "$PORT" ] && return 0
    sleep 0.05
  done
  cat "$WORK/server.out" >&2; echo "server did not start" >&2; exit 1
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime of every thread, in clock ticks
main_ns() { awk '{print $1}' "/proc/$1/schedstat"; }        # CPU time of the main (event-loop) thread, ns

run_one() {  # $1 = bare|noshim|shim, $2 = variant; sets RPS, MAIN_US and CPU_US (CPU us per request)
  start_server "$1" "$2"
  # txray run execs node, so the pid is node's: check the shim is there (or not) as intended.
  local opts
  opts=$(tr '\0' '\n' <"/proc/$SERVER_PID/environ" | grep '^NODE_OPTIONS=' || true)
  if [ "$1" = shim ] && [[ $opts != *txray-hints.js* ]]; then
    echo "node_hints: txray run did not add the shim to NODE_OPTIONS" >&2; exit 1
  fi
  if [ "$1" != shim ] && [[ $opts == *txray-hints.js* ]]; then
    echo "node_hints: the shim is loaded in the $1 run" >&2; exit 1
  fi
  local t0 t1 m0 m1 out
  t0=$(cpu_ticks "$SERVER_PID"); m0=$(main_ns "$SERVER_PID")
  out=$("$LOADGEN" --port "$PORT" --connections "$CONNS" --seconds "$SECS" --path /hello --sink "ipc://$WORK/sink.sock")
  t1=$(cpu_ticks "$SERVER_PID"); m1=$(main_ns "$SERVER_PID")
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  echo "$1 $2: $out" | tr '\n' ' ' >>"$WORK/log"; echo >>"$WORK/log"
  read -r _ n _ secs _ RPS _ errors <<<"$(grep '^requests' <<<"$out")"
  if [ "$errors" != 0 ]; then
    echo "node_hints: $1 $2: $errors request errors" >&2; cat "$WORK/server.out" >&2; exit 1
  fi
  MAIN_US=$(awk -v t="$((m1 - m0))" -v n="$n" 'BEGIN {printf "%.2f", t / 1000 / n}')
  CPU_US=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN {printf "%.2f", 1e6 * t / hz / n}')
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "node_hints: $("$NODE" --version) http server at saturation, $CONNS keep-alive connections, ${SECS}s per run, $ROUNDS rounds alternating: $MODES"
for V in $VARIANTS; do
  declare -A rps=() main=() cpu=()
  for r in $(seq "$ROUNDS"); do
    order=$MODES
    [ $((r % 2)) = 0 ] && order=$(tr ' ' '\n' <<<"$MODES" | tac | tr '\n' ' ')  # every other round backwards
    for how in $order; do
      run_one "$how" "$V"
      rps[$how]+="$RPS "; main[$how]+="$MAIN_US "; cpu[$how]+="$CPU_US "
    done
  done
  case $V in
    compute) what="per request $WORK_ITERS iterations of arithmetic, then the answer" ;;
    call)    what="per request the same plus one outbound keep-alive GET to a local back-end, made in the handler" ;;
    callawait) what="the same call made after an await: its request's context propagated by AsyncLocalStorage" ;;
  esac
  echo "variant $V ($what)"
  for how in $MODES; do printf '  %-7s req/s:                   %s\n' "$how" "${rps[$how]}"; done
  for how in $MODES; do printf '  %-7s main thread CPU us/req: %s\n' "$how" "${main[$how]}"; done
  for how in $MODES; do printf '  %-7s process CPU us/req:     %s\n' "$how" "${cpu[$how]}"; done
  # Medians of each column, and of the per-round differences (shim minus no shim, run side by side:
  # they share the neighbours' load, which moves the absolute figures by far more than 2 us).
  awk -v rb="${rps[bare]}" -v rn="${rps[noshim]}" -v rs="${rps[shim]}" \
      -v hb="${main[bare]}" -v hn="${main[noshim]}" -v hs="${main[shim]}" \
      -v cb="${cpu[bare]}" -v cn="${cpu[noshim]}" -v cs="${cpu[shim]}" '
    function med(s,   a, n, i, j, t) {
      n = split(s, a, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function us(s,   a, n, i, o) { n = split(s, a, " "); for (i = 1; i <= n; i++) o = o " " 1e6 / a[i]; return o }
    function diff(x, y,   a, b, n, i, o) { n = split(x, a, " "); split(y, b, " "); for (i = 1; i <= n; i++) o = o " " (a[i] - b[i]); return o }
    BEGIN {
      wb = us(rb); wn = us(rn); ws = us(rs)
      printf "  medians                     bare    agent, no shim      agent + shim   hints: shim - no shim, per round\n"
      printf "  req/s                   %8.0f %8.0f (%5.1f%%) %8.0f (%5.1f%%)\n", med(rb), med(rn), 100 * med(rn) / med(rb), med(rs), 100 * med(rs) / med(rb)
      printf "  wall us/request         %8.2f %+8.2f us         %+8.2f us         %+6.2f us\n", med(wb), med(diff(wn, wb)), med(diff(ws, wb)), med(diff(ws, wn))
      printf "  main thread CPU us/req  %8.2f %+8.2f us         %+8.2f us         %+6.2f us  (target <= 2)\n", med(hb), med(diff(hn, hb)), med(diff(hs, hb)), med(diff(hs, hn))
      printf "  process CPU us/request  %8.2f %+8.2f us         %+8.2f us         %+6.2f us\n", med(cb), med(diff(cn, cb)), med(diff(cs, cb)), med(diff(cs, cn))
    }'
  if [[ " $MODES " == *" als "* ]]; then
    awk -v hb="${main[bare]}" -v ha="${main[als]}" 'BEGIN {
      n = split(hb, b, " "); split(ha, a, " ")
      for (i = 1; i <= n; i++) d[i] = a[i] - b[i]
      for (i = 2; i <= n; i++) for (j = i; j > 1 && d[j - 1] > d[j]; j--) { t = d[j]; d[j] = d[j - 1]; d[j - 1] = t }
      printf "  node alone with AsyncLocalStorage.enterWith per request (als_only.js), main thread CPU: %+.2f us/request over bare (median per round)\n", n % 2 ? d[(n + 1) / 2] : (d[n / 2] + d[n / 2 + 1]) / 2
    }'
  fi
  unset rps main cpu
done
grep -h "^shim .*sink messages" "$WORK/log" | tail -1 | sed 's/^/  last agent run: /' || true
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
