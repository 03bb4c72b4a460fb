#!/usr/bin/env bash
# nginx (Debian's, 1 worker) serving a 6-byte static file to wrk, bare vs under the agent, alternating
# in one run (issue 14). The figure is the worker's own CPU time per request, every thread included
# (utime + stime of /proc/PID/stat: the agent thread's encoding and sending counts), medians over the
# rounds; beside it the cost of one CLOCK_THREAD_CPUTIME_ID read measured in the same run
# (txray-bench-clock-cost, which also reports the perf_event task-clock paths) and the target ratio
#   added CPU per request / (2 x one thread-CPU clock read)   (target <= 1.5)
# Under the agent a real `txray collect` stores every transaction (its CPU is its own process's).
# Usage: bench/nginx_static/run.sh BUILD_DIR
#   env: ROUNDS=5 SECONDS_PER_RUN=4 CONNS=10 PIN=1 (worker on CPU 1, wrk on CPU 0; PIN=0: no pinning)
#        RATE=N: txray-bench-loadgen at N requests/s instead of wrk as fast as it can, so that bare and agent
#        serve the same load (on 2 cores the collector takes CPU from wrk, and a worker that waits costs
#        more per request than a saturated one; docs/performance.md)
#        AGENT_ENV="K=V ...": settings for the agent runs (e.g. TXRAY_CPU_CLOCK=syscall)
#        COLLECTOR=sink: the agent sends to txray-bench-loadgen's sink (receives and discards, on the load
#        generator's CPU) instead of a real `txray collect`: on 2 cores the collector's storing takes CPU
#        from the load generator, so the bare and the agent runs meet different loads (docs/performance.md)
# bench/nginx_static/instructions.sh counts instructions instead (load-independent, callgrind).
set -euo pipefail
BUILD=$(realpath "${1:-build}")
AGENT=$BUILD/lib/libtxray-agent.so
TXRAY=$BUILD/bin/txray
CLOCK=$BUILD/bin/txray-bench-clock-cost
NGINX=${NGINX:-/usr/sbin/nginx}
ROUNDS=${ROUNDS:-5}
SECS=${SECONDS_PER_RUN:-4}
CONNS=${CONNS:-10}
PIN=${PIN:-1}
for tool in "$NGINX" wrk; do
  command -v "$tool" >/dev/null || { echo "nginx_static: $tool is missing (apt-get install nginx-light wrk)" >&2; exit 1; }
done
WORK=$(mktemp -d)
chmod 755 "$WORK"
NGINX_PID= COLLECT_PID=
cleanup() {
  for p in $NGINX_PID $COLLECT_PID; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www" "$WORK/logs"
printf 'hello\n' >"$WORK/www/f.txt"  # 6 bytes
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process on;
$( [ "$(id -u)" = 0 ] && echo "user root;" )
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/tmp_body; proxy_temp_path $WORK/tmp_proxy; fastcgi_temp_path $WORK/tmp_fcgi;
  uwsgi_temp_path $WORK/tmp_uwsgi; scgi_temp_path $WORK/tmp_scgi;
  server { listen 127.0.0.1:$PORT; root $WORK/www; location / { } }
}
CONF

WRK_PIN=() NGX_PIN=()
if [ "$PIN" = 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then WRK_PIN=(taskset -c 0); NGX_PIN=(taskset -c 1); fi

if [ "${COLLECTOR:-collect}" = sink ]; then
  "${WRK_PIN[@]}" "$BUILD/bin/txray-bench-loadgen" --sink "ipc://$WORK/collect.sock" >"$WORK/sink.out" &
else
  "$TXRAY" collect --listen "ipc://$WORK/collect.sock" --db "$WORK/store.db" --status-interval 0 2>"$WORK/collect.err" &
fi
COLLECT_PID=$!

start_nginx() {  # $1 = bare|agent; sets NGINX_PID (the master) and WORKER
  if [ "$1" = agent ]; then
    env LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/collect.sock" TXRAY_APP=bench-nginx ${AGENT_ENV:-} \
      "${NGX_PIN[@]}" "$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -e "$WORK/logs/error.log" & NGINX_PID=$!
  else
    "${NGX_PIN[@]}" "$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -e "$WORK/logs/error.log" & NGINX_PID=$!
  fi
  WORKER=
  for _ in $(seq 200); do
    WORKER=$(pgrep -P "$NGINX_PID" | head -1 || true)
    if [ -n "$WORKER" ] && curl -sf "http://127.0.0.1:$PORT/f.txt" >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  echo "nginx did not start" >&2; cat "$WORK/logs/error.log" >&2; exit 1
}
stop_nginx() { kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime of every thread, clock ticks

run_one() {  # $1 = bare|agent; prints "req/s cpu-us-per-request"
  start_nginx "$1"
  "${WRK_PIN[@]}" wrk -t1 -c"$CONNS" -d1s "http://127.0.0.1:$PORT/f.txt" >/dev/null  # warm-up (agent thread up)
  local t0 t1 out n
  t0=$(cpu_ticks "$WORKER")
  if [ -n "${RATE:-}" ]; then
    out=$("${WRK_PIN[@]}" "$BUILD/bin/txray-bench-loadgen" --port "$PORT" --connections "$CONNS" --seconds "$SECS" \
      --path /f.txt --rate "$RATE" | awk '{printf "%s requests in\nRequests/sec: %s\n", $2, $6}')
  else
    out=$("${WRK_PIN[@]}" wrk -t1 -c"$CONNS" -d"${SECS}s" "http://127.0.0.1:$PORT/f.txt")
  fi
  t1=$(cpu_ticks "$WORKER")
  stop_nginx
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$out" | awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$n" \
    '/^Requests\/sec/ {printf "%s %.3f\n", $2, 1e6 * t / hz / n}'
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

bare=() agent=() bare_cpu=() agent_cpu=() clk=()
for r in $(seq "$ROUNDS"); do
  read -r rps cpu <<<"$(run_one bare)"; bare+=("$rps"); bare_cpu+=("$cpu")
  read -r rps cpu <<<"$(run_one agent)"; agent+=("$rps"); agent_cpu+=("$cpu")
  clk+=("$("${NGX_PIN[@]}" "$CLOCK" | awk '/^clock_gettime/ {print $2}')")
done
"${NGX_PIN[@]}" "$CLOCK" >"$WORK/clock_paths"
mb=$(median "${bare[@]}"); ma=$(median "${agent[@]}")
mbc=$(median "${bare_cpu[@]}"); mac=$(median "${agent_cpu[@]}"); mclk=$(median "${clk[@]}")
LOAD="wrk -c$CONNS"; [ -n "${RATE:-}" ] && LOAD="txray-bench-loadgen -c$CONNS at $RATE req/s"
[ "${COLLECTOR:-collect}" = sink ] && LOAD="$LOAD, agent sending to a discarding sink"
echo "nginx_static: nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), 1 worker, 6-byte file, $LOAD${AGENT_ENV:+, agent with $AGENT_ENV}, ${SECS}s per run, $ROUNDS rounds alternating$( [ ${#NGX_PIN[@]} -gt 0 ] && echo ', worker on CPU 1, wrk on CPU 0')"
echo "  bare  req/s: ${bare[*]}"
echo "  agent req/s: ${agent[*]}"
echo "  bare  worker CPU us/request: ${bare_cpu[*]}"
echo "  agent worker CPU us/request: ${agent_cpu[*]}"
echo "  one CLOCK_THREAD_CPUTIME_ID read, ns (per round): ${clk[*]}"
echo "  thread-CPU clock paths on this host (ns per read):"; sed 's/^/    /' "$WORK/clock_paths"
awk -v b="$mbc" -v a="$mac" -v c="$mclk" -v rb="$mb" -v ra="$ma" 'BEGIN {
  added = a - b; two = 2 * c / 1000
  printf "  median: bare %.2f us/req, agent %.2f us/req, added %.2f us/req; two clock reads %.3f us\n", b, a, added, two
  printf "  ratio added / (2 x clock read) = %.2f   (target <= 1.5)\n", added / two
  printf "  throughput: bare %s req/s, agent %s req/s (%.1f%% of bare)\n", rb, ra, 100 * ra / rb
}'
