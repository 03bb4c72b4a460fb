#!/usr/bin/env bash
# make demo: the whole txray pipeline on the samples, end to end.
#
#   bash scripts/demo.sh <build-dir>
#
# 1. starts `txray collect` on a private ipc:// endpoint, writing out/demo/txray.db (a fresh file each run;
#    TXRAY_DEMO_DIR=<dir> puts everything elsewhere);
# 2. starts the samples under `txray run`: relay-backend and relay (the GZIP case), orders (C++, four
#    channels), py-orders (Python, standard library only) and the gRPC pair grpc-front -> grpc-back
#    (Python grpcio over h2c; skipped with a note when python3-grpcio is missing);
# 3. drives them for TXRAY_DEMO_SECONDS (default 30) with a one-line progress display;
# 4. prints a short slow-call report (the whole one goes to out/demo/report.md and .html) and the
#    slowest relay profile;
# 5. opens txray-viewer on the result when $DISPLAY is set, else saves a screenshot and says where.
#
# Every process it starts runs in a process group of its own and is stopped on exit, on Ctrl-C and on
# SIGTERM (the trap below); none is left behind.
set -euo pipefail

BUILD=$(cd "${1:-build}" && pwd)
BIN="$BUILD/bin"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${TXRAY_DEMO_SECONDS:-30}
OUT=${TXRAY_DEMO_DIR:-$PWD/out/demo}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export TXRAY_DEMO_DIR="$OUT"  # inherited by everything started here (the tests look for it)
DB="$OUT/txray.db"
ENDPOINT="ipc://$OUT/collector.sock"
PYTHON=/usr/bin/python3

die() { echo "demo: $*" >&2; exit 1; }
[[ "$DURATION" =~ ^[0-9]+$ && "$DURATION" -ge 1 ]] || die "TXRAY_DEMO_SECONDS must be a whole number of seconds"
for b in txray txray-relay txray-relay-backend txray-relay-client txray-orders txray-orders-bench; do
  [ -x "$BIN/$b" ] || die "$BIN/$b is missing: build first (make demo does)"
done
[ -f "$BUILD/lib/libtxray-agent.so" ] || die "$BUILD/lib/libtxray-agent.so is missing: build first"

# --- process bookkeeping ---------------------------------------------------------------------------
GROUPS_STARTED=()   # process group ids (each started process leads its own group)
DRIVERS=()          # load generators, stopped first

# start NAME CMD...: runs CMD in a new process group, output to $OUT/NAME.log; sets LAST_PID.
start() {
  local name=$1
  shift
  setsid "$@" >"$OUT/$name.log" 2>&1 </dev/null &
  LAST_PID=$!
  GROUPS_STARTED+=("$LAST_PID")
}

# stop_groups PGID...: SIGTERM each group, wait up to 10 s, then SIGKILL what is left.
stop_groups() {
  local g alive
  for g in "$@"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for _ in $(seq 100); do
    alive=0
    for g in "$@"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && return 0
    sleep 0.1
  done
  for g in "$@"; do kill -KILL -- "-$g" 2>/dev/null || true; done
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ ${#GROUPS_STARTED[@]} -gt 0 ] && stop_groups "${GROUPS_STARTED[@]}"
  wait 2>/dev/null || true
  exit $rc
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted, stopping everything"; exit 130' INT
trap 'exit 143' TERM

# wait_listen LOG CHANNEL PID: the port a sample announced ("... listening on CHANNEL port N").
wait_listen() {
  local log=$1 channel=$2 pid=$3 port
  for _ in $(seq 1200); do  # up to 120 s: the orders database is generated on first start
    port=$(sed -n "s/.*listening on $channel port \([0-9]*\).*/\1/p" "$log" 2>/dev/null | head -n1)
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$(basename "$log" .log) exited before listening"; }
    sleep 0.1
  done
  die "$(basename "$log" .log) did not start listening"
}

count() {  # transactions stored so far, per app, as "app=N ..."
  /usr/bin/sqlite3 -readonly "file:$DB?mode=ro" \
    "SELECT group_concat(app || '=' || n, '  ') FROM (SELECT app, count(*) n FROM transactions GROUP BY app ORDER BY app)" \
    2>/dev/null || true
}

# --- 1. collector ---------------------------------------------------------------------------------
rm -f "$DB" "$DB-wal" "$DB-shm" "$OUT/collector.sock"
echo "demo: output in $OUT"
start collector "$BIN/txray" collect --listen "$ENDPOINT" --db "$DB" --status-interval 5
COLLECTOR=$LAST_PID
for _ in $(seq 200); do [ -S "$OUT/collector.sock" ] && break; sleep 0.05; done
[ -S "$OUT/collector.sock" ] || { cat "$OUT/collector.log" >&2; die "the collector did not start"; }

# --- 2. samples under the agent ----------------------------------------------------------------------
run() {  # run NAME APP CMD...: CMD under `txray run`
  local name=$1 app=$2
  shift 2
  start "$name" "$BIN/txray" run --collector "$ENDPOINT" --app "$app" -- "$@"
}
SERVICES=()
run relay-backend relay-backend "$BIN/txray-relay-backend" --listen 127.0.0.1:0
SERVICES+=("$LAST_PID")
BACKEND_PORT=$(wait_listen "$OUT/relay-backend.log" http "$LAST_PID")
run relay relay "$BIN/txray-relay" --listen 127.0.0.1:0 --backend "127.0.0.1:$BACKEND_PORT"
SERVICES+=("$LAST_PID")
RELAY_PORT=$(wait_listen "$OUT/relay.log" http "$LAST_PID")
# The orders database is generated untraced, before the service starts under the agent: its 400,000
# INSERTs belong to no request and would be stored as unattributed steps, the first thing the report says.
if [ ! -f "$OUT/orders.db" ]; then
  echo "demo: generating the orders database (100,000 customers, once)…"
  "$BIN/txray-orders" --db "$OUT/orders.db" --generate-only >"$OUT/orders-generate.log" 2>&1 ||
    { cat "$OUT/orders-generate.log" >&2; die "generating the orders database failed"; }
fi
run orders orders "$BIN/txray-orders" --db "$OUT/orders.db" --tcp 127.0.0.1:0 --http 127.0.0.1:0
SERVICES+=("$LAST_PID")
ORDERS_TCP=$(wait_listen "$OUT/orders.log" tcp "$LAST_PID")
ORDERS_HTTP=$(wait_listen "$OUT/orders.log" http "$LAST_PID")
run py-orders py-orders "$PYTHON" "$SRC/samples/py_orders/orders_service.py" --db "$OUT/orders.db" --http 127.0.0.1:0
SERVICES+=("$LAST_PID")
PY_HTTP=$(wait_listen "$OUT/py-orders.log" http "$LAST_PID")
GRPC_FRONT=""
if "$PYTHON" -c "import grpc" 2>/dev/null; then
  run grpc-back grpc-back "$PYTHON" "$SRC/samples/grpc_pair/grpc_pair.py" back --listen 127.0.0.1:0
  SERVICES+=("$LAST_PID")
  GRPC_BACK=$(wait_listen "$OUT/grpc-back.log" grpc "$LAST_PID")
  run grpc-front grpc-front "$PYTHON" "$SRC/samples/grpc_pair/grpc_pair.py" front --listen 127.0.0.1:0 --back "127.0.0.1:$GRPC_BACK"
  SERVICES+=("$LAST_PID")
  GRPC_FRONT=$(wait_listen "$OUT/grpc-front.log" grpc "$LAST_PID")
else
  echo "demo: python3-grpcio is not installed: the gRPC pair is left out (scripts/install-deps.sh installs it)"
fi
echo "demo: relay-backend :$BACKEND_PORT  relay :$RELAY_PORT  orders tcp :$ORDERS_TCP http :$ORDERS_HTTP  py-orders :$PY_HTTP${GRPC_FRONT:+  grpc-front :$GRPC_FRONT}"

# --- 3. load ------------------------------------------------------------------------------------------
# The drivers are plain clients (not traced). Each loops until it is stopped. The order drivers pause
# between bursts so that the relay keeps a core to itself now and then: its gunzip row is then CPU-bound
# (CPU_T close to GAP) rather than waiting for a CPU.
STOP_FILE="$OUT/stop-drivers"  # drivers finish the request in flight and leave when it appears
rm -f "$STOP_FILE"
start drive-relay bash -c "while [ ! -e '$STOP_FILE' ]; do '$BIN/txray-relay-client' --relay 127.0.0.1:$RELAY_PORT -n 1 >/dev/null || sleep 0.5; done"
DRIVERS+=("$LAST_PID")
start drive-orders bash -c "while [ ! -e '$STOP_FILE' ]; do '$BIN/txray-orders-bench' --tcp 127.0.0.1:$ORDERS_TCP --http 127.0.0.1:$ORDERS_HTTP --clients 1 --seconds 0.05 --rounds 1 >/dev/null || sleep 0.5; sleep 0.6; done"
DRIVERS+=("$LAST_PID")
start drive-py-orders bash -c "while [ ! -e '$STOP_FILE' ]; do '$BIN/txray-orders-bench' --http 127.0.0.1:$PY_HTTP --channels http-json,http-xml --clients 1 --seconds 0.05 --rounds 1 >/dev/null || sleep 0.5; sleep 0.6; done"
DRIVERS+=("$LAST_PID")
# 4 concurrent gRPC calls at a time on one HTTP/2 connection, in bursts; each with a traceparent of its own
# (an instrumented caller), so that the front's Python shim files its call to the back under its request.
if [ -n "$GRPC_FRONT" ]; then
  start drive-grpc bash -c "while [ ! -e '$STOP_FILE' ]; do '$PYTHON' '$SRC/samples/grpc_pair/grpc_pair.py' client --target 127.0.0.1:$GRPC_FRONT --requests 40 --concurrency 4 --traceparent >/dev/null || sleep 0.5; sleep 0.5; done"
  DRIVERS+=("$LAST_PID")
fi

START=$(date +%s)
while :; do
  NOW=$(date +%s)
  ELAPSED=$((NOW - START))
  [ $ELAPSED -ge "$DURATION" ] && break
  printf '\r\033[K[%3d/%d s] stored: %s' "$ELAPSED" "$DURATION" "$(count)"
  sleep 1
done
# Let the drivers finish what they are doing (a relay page takes a second or two), so that no request is
# cut off half-way and stored as an error; stop whatever is still running after 20 s.
touch "$STOP_FILE"
for _ in $(seq 200); do
  busy=0
  for d in "${DRIVERS[@]}"; do kill -0 "$d" 2>/dev/null && busy=1; done
  [ $busy -eq 0 ] && break
  sleep 0.1
done
stop_groups "${DRIVERS[@]}"
# Services exit on SIGTERM through their normal exit path, so the agent sends what it still holds.
stop_groups "${SERVICES[@]}"
sleep 1
kill -INT -- "-$COLLECTOR" 2>/dev/null || true
for _ in $(seq 200); do kill -0 "$COLLECTOR" 2>/dev/null || break; sleep 0.1; done
printf '\r\033[K[%3d/%d s] stored: %s\n' "$DURATION" "$DURATION" "$(count)"

# --- 4. report ----------------------------------------------------------------------------------------
echo
echo "== slow-call report (txray report --top 5: summary, slowest, names) =="
if "$BIN/txray" report --db "$DB" --top 5 --format md >"$OUT/report.md" 2>"$OUT/report.err"; then
  # The short part on the terminal; the whole report (SQL, calls, N+1, histogram) in files.
  sed '/^## SQL by fingerprint/,$d' "$OUT/report.md"
  "$BIN/txray" report --db "$DB" --format html -o "$OUT/report.html" 2>/dev/null || true
  echo "demo: full report: $OUT/report.md and $OUT/report.html"
else
  cat "$OUT/report.err" >&2
  echo "(txray report failed; the slowest transaction instead)"
  "$BIN/txray" show --db "$DB" --slowest 1
fi
echo
echo "== the slowest relay request (the GZIP case: socket read, then the CPU-bound gunzip row) =="
"$BIN/txray" show --db "$DB" --app relay --slowest 1 || true
if [ -n "$GRPC_FRONT" ]; then
  echo
  echo "== gRPC: the slowest back-end call (one transaction per HTTP/2 stream; the front's calls to it are unattributed, linked by traceparent) =="
  "$BIN/txray" show --db "$DB" --app grpc-back --slowest 1 || true
fi

# --- 5. viewer ----------------------------------------------------------------------------------------
echo
if [ ! -x "$BIN/txray-viewer" ]; then
  echo "demo: txray-viewer was not built (TXRAY_BUILD_VIEWER=OFF?); open $DB with it later"
elif [ -n "${DISPLAY:-}" ]; then
  echo "demo: opening txray-viewer on $DB (close it to finish)"
  "$BIN/txray-viewer" "$DB" || echo "demo: txray-viewer exited with status $?"
else
  if QT_QPA_PLATFORM=offscreen "$BIN/txray-viewer" --screenshot "$OUT/viewer.png" --select-slowest --log-scale "$DB" >"$OUT/viewer.log" 2>&1; then
    echo "demo: no \$DISPLAY; screenshot of the viewer saved to $OUT/viewer.png"
  else
    echo "demo: the viewer screenshot failed (see $OUT/viewer.log)"
  fi
fi
echo "demo: data in $DB — try: $BIN/txray show --db $DB --slowest 3"
