#!/usr/bin/env bash
# gRPC calls on loopback (Python grpcio, h2c, samples/grpc_pair's back service; its Get sleeps 2 ms): a
# client making CALLS unary calls on one channel, CONC at a time, run with both sides bare and with both
# under the agent (the back in http mode: a transaction per stream; the client in process mode: a gRPC
# row per call with a traceparent field put into its HEADERS frame), alternating, ROUNDS times. Prints
# the medians side by side, their ratio and the added cost per call. A real collector receives the
# transactions. TLS=1: over TLS (a certificate made with openssl; grpcio's OpenSSL, so the traceparent
# field goes in through the SSL_write hook). Usage: bench/grpc_call/run.sh BUILD_DIR   (env: CALLS, CONC,
# ROUNDS, TLS)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
HERE=$(cd "$(dirname "$0")" && pwd)
PAIR=$HERE/../../samples/grpc_pair/grpc_pair.py
AGENT=$BUILD/lib/libtxray-agent.so
PY=/usr/bin/python3
CALLS=${CALLS:-2000}
CONC=${CONC:-8}
ROUNDS=${ROUNDS:-5}
TLS=${TLS:-0}
WORK=$(mktemp -d)
"$PY" -c "import grpc" 2>/dev/null || { echo "grpc_call: python3-grpcio is missing (scripts/install-deps.sh)"; exit 1; }

"$BUILD/bin/txray" collect --listen "ipc://$WORK/c.sock" --db "$WORK/t.db" --status-interval 60 >"$WORK/collect.log" 2>&1 & COLLECTOR=$!
PIDS=()
cleanup() { kill "${PIDS[@]}" "$COLLECTOR" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
sleep 0.5
BACK_ARGS=(); CA=()
if [ "$TLS" = 1 ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
  BACK_ARGS=(--tls "$WORK/cert.pem" "$WORK/key.pem"); CA=("$WORK/cert.pem")
fi

serve() {  # serve NAME ENV...: starts the back service, prints its port
  local name=$1
  shift
  env "$@" "$PY" "$PAIR" back "${BACK_ARGS[@]}" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do
    port=$(sed -n 's/.*grpc port \([0-9]*\).*/\1/p' "$WORK/$name.log")
    [ -n "$port" ] && { echo "$port"; return; }
    sleep 0.1
  done
  echo "grpc_call: $name did not start" >&2; exit 1
}
BARE_PORT=$(serve bare -u LD_PRELOAD)
AGENT_PORT=$(serve agent LD_PRELOAD="$AGENT" TXRAY_COLLECTOR="ipc://$WORK/c.sock" TXRAY_APP=bench-grpc-back)

bare=(); agent=(); bare_cpu=(); agent_cpu=()
for r in $(seq "$ROUNDS"); do
  read -r _ w _ c < <("$PY" "$HERE/client.py" "127.0.0.1:$BARE_PORT" "$CALLS" "$CONC" "${CA[@]}")
  bare+=("$w"); bare_cpu+=("$c")
  read -r _ w _ c < <(LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/c.sock" TXRAY_APP=bench-grpc-client TXRAY_MODE=process \
                      "$PY" "$HERE/client.py" "127.0.0.1:$AGENT_PORT" "$CALLS" "$CONC" "${CA[@]}")
  agent+=("$w"); agent_cpu+=("$c")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
mb=$(median "${bare[@]}"); ma=$(median "${agent[@]}")
cb=$(median "${bare_cpu[@]}"); ca=$(median "${agent_cpu[@]}")
echo "grpc_call: $CALLS unary gRPC calls per run on one HTTP/2 connection$([ "$TLS" = 1 ] && echo " over TLS"), $CONC at a time, $ROUNDS rounds alternating"
echo "  (Python grpcio; the back's handler sleeps 2 ms; agent = client and server both traced)"
echo "  wall ns/call   bare:  ${bare[*]}"
echo "  wall ns/call   agent: ${agent[*]}"
echo "  client CPU ns/call bare:  ${bare_cpu[*]}"
echo "  client CPU ns/call agent: ${agent_cpu[*]}"
printf '  median wall:       bare %8s  agent %8s  added %7s ns/call  ratio %s\n' "$mb" "$ma" "$((ma - mb))" \
  "$(awk -v a="$ma" -v b="$mb" 'BEGIN{printf "%.3f", a/b}')"
printf '  median client CPU: bare %8s  agent %8s  added %7s ns/call  ratio %s\n' "$cb" "$ca" "$((ca - cb))" \
  "$(awk -v a="$ca" -v b="$cb" 'BEGIN{printf "%.3f", a/b}')"
sleep 1  # the collector commits every 250 ms
n=$(/usr/bin/sqlite3 "file:$WORK/t.db?mode=ro" "SELECT count(*) FROM transactions WHERE app = 'bench-grpc-back'" 2>/dev/null || echo "?")
echo "  back transactions stored: $n (expected about $((ROUNDS * (CALLS / CONC * CONC + 50))))"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
