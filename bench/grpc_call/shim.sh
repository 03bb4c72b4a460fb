#!/usr/bin/env bash
# What the Python grpcio shim (agent/runtimes/python/_txray_grpc.py) adds to a gRPC server's own calls:
# samples/grpc_pair's front (its Page calls the back's Get once per request) under the agent with the
# shims on PYTHONPATH, once with hints on (each outbound call: the `S` hint, a traceparent in its
# metadata, its row filed under the request) and once with TXRAY_RUNTIME_HINTS=0 (the agent's own
# traceparent, the row unattributed), and bare. The client (traced, process mode, so every front request
# has a caller traceparent) makes CALLS calls CONC at a time; rounds alternate. Prints the medians of the
# client's wall time per call and of the front's CPU per call (from /proc/<pid>/stat, 10 ms ticks), their
# ratios and the difference. Usage: bench/grpc_call/shim.sh BUILD_DIR   (env: CALLS, CONC, ROUNDS)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
HERE=$(cd "$(dirname "$0")" && pwd)
PAIR=$HERE/../../samples/grpc_pair/grpc_pair.py
AGENT=$BUILD/lib/libtxray-agent.so
SHIMS=$BUILD/lib/txray/runtimes/python
PY=/usr/bin/python3
CALLS=${CALLS:-2000}
CONC=${CONC:-8}
ROUNDS=${ROUNDS:-5}
WORK=$(mktemp -d)
"$PY" -c "import grpc" 2>/dev/null || { echo "grpc_call: python3-grpcio is missing (scripts/install-deps.sh)"; exit 1; }
"$BUILD/bin/txray" collect --listen "ipc://$WORK/c.sock" --db "$WORK/t.db" --status-interval 60 >"$WORK/collect.log" 2>&1 & COLLECTOR=$!
PIDS=()
cleanup() { kill "${PIDS[@]}" "$COLLECTOR" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
sleep 0.5
AG=(LD_PRELOAD="$AGENT" TXRAY_COLLECTOR="ipc://$WORK/c.sock")
start() {  # start NAME ROLE ARGS -- ENV...: prints "pid port"
  local name=$1 role=$2; shift 2
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  env "$@" "$PY" "$PAIR" "$role" "${args[@]}" >"$WORK/$name.log" 2>&1 &
  local pid=$!
  PIDS+=($pid)
  for _ in $(seq 300); do
    port=$(sed -n 's/.*grpc port \([0-9]*\).*/\1/p' "$WORK/$name.log")
    [ -n "$port" ] && { echo "$pid $port"; return; }
    sleep 0.1
  done
  echo "shim.sh: $name did not start" >&2; exit 1
}
read -r _ BACK < <(start back back -- "${AG[@]}" TXRAY_APP=shim-back)
read -r BPID BPORT < <(start bare-front front --back "127.0.0.1:$BACK" -- -u LD_PRELOAD)
read -r OPID OPORT < <(start off-front front --back "127.0.0.1:$BACK" -- "${AG[@]}" TXRAY_APP=shim-off PYTHONPATH="$SHIMS" TXRAY_RUNTIME_HINTS=0)
read -r NPID NPORT < <(start on-front front --back "127.0.0.1:$BACK" -- "${AG[@]}" TXRAY_APP=shim-on PYTHONPATH="$SHIMS")
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
declare -A wall cpu
for r in $(seq "$ROUNDS"); do
  for v in bare off on; do
    case $v in bare) pid=$BPID port=$BPORT;; off) pid=$OPID port=$OPORT;; on) pid=$NPID port=$NPORT;; esac
    t0=$(ticks "$pid")
    read -r _ w _ _ < <(env "${AG[@]}" TXRAY_APP=shim-client TXRAY_MODE=process GRPC_METHOD=/demo.Front/Page \
                        "$PY" "$HERE/client.py" "127.0.0.1:$port" "$CALLS" "$CONC")
    t1=$(ticks "$pid")
    wall[$v]+="$w "
    cpu[$v]+="$(( (t1 - t0) * 1000000000 / HZ / (CALLS + 50) )) "
  done
done
median() { printf '%s\n' $@ | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
echo "grpc_call/shim: $CALLS front calls per run ($CONC at a time, one connection), each calling the back once; $ROUNDS rounds"
for v in bare off on; do
  printf '  %-4s wall ns/call: %s  front CPU ns/call: %s\n' "$v" "${wall[$v]}" "${cpu[$v]}"
done
wb=$(median ${wall[bare]}); wo=$(median ${wall[off]}); wn=$(median ${wall[on]})
cb=$(median ${cpu[bare]}); co=$(median ${cpu[off]}); cn=$(median ${cpu[on]})
printf '  median wall:      bare %8s  hints off %8s  hints on %8s  on-off %7s ns  on/off %s\n' "$wb" "$wo" "$wn" \
  "$((wn - wo))" "$(awk -v a="$wn" -v b="$wo" 'BEGIN{printf "%.3f", a/b}')"
printf '  median front CPU: bare %8s  hints off %8s  hints on %8s  on-off %7s ns  on/off %s\n' "$cb" "$co" "$cn" \
  "$((cn - co))" "$(awk -v a="$cn" -v b="$co" 'BEGIN{printf "%.3f", a/b}')"
sleep 1
q() { /usr/bin/sqlite3 "file:$WORK/t.db?mode=ro" "$1" 2>/dev/null || echo "?"; }
echo "  front rows filed under their request (hints on): $(q "SELECT count(*) FROM steps s JOIN transactions t ON t.id = s.tx_id WHERE t.app = 'shim-on' AND t.kind = 'grpc' AND s.kind = 'HTTP_CALL'")" \
     "of $(q "SELECT count(*) FROM transactions WHERE app = 'shim-on' AND kind = 'grpc'") requests"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
