#!/usr/bin/env bash
# A sample HTTP server at saturation, bare vs under the agent, alternating in one run (target: the agent
# keeps >= 97% of bare throughput). Server: txray-burner serve with no back-end (one thread per
# keep-alive connection, samples/common/http), with BURN_US microseconds of CPU work per request:
#   0   an empty handler (~8 us of CPU per request, nearly all of it the kernel's TCP): the worst case,
#       where every nanosecond the agent adds shows;
#   100 a handler doing 100 us of work, a small but real API endpoint.
# Load: txray-bench-loadgen, CONNS keep-alive connections for SECONDS_PER_RUN per run. Under the agent
# every request is a transaction (START/END rows, both clocks), queued, encoded and sent over ZeroMQ to
# a PULL sink in the load generator. Throughput on this shared 2-core machine follows the neighbours'
# load, so the server's own CPU time per request (all its threads, the agent's included) is printed too.
# Issue 14's figure is printed too: added CPU per request / (2 x one thread-CPU clock read measured in the
# same run), target <= 1.5 (the two reads a transaction needs: START and END).
# Usage: bench/http_server/run.sh BUILD_DIR   (env: ROUNDS=5 SECONDS_PER_RUN=3 CONNS=4 BURN_US="0 100",
#        AGENT_ENV="K=V ...": settings for the agent runs, e.g. TXRAY_CPU_SAMPLES=0)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
SERVER=$BUILD/bin/txray-burner
LOADGEN=$BUILD/bin/txray-bench-loadgen
CLOCK=$BUILD/bin/txray-bench-clock-cost  # one CLOCK_THREAD_CPUTIME_ID read, same run (bench/nginx_static)
AGENT=$BUILD/lib/libtxray-agent.so
ROUNDS=${ROUNDS:-5}
SECS=${SECONDS_PER_RUN:-3}
CONNS=${CONNS:-4}
BURN_LIST=${BURN_US:-0 100}
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

start_server() {  # $1 = bare|agent; sets SERVER_PID and PORT
  : >"$WORK/server.out"
  if [ "$1" = agent ]; then
    env LD_PRELOAD=$AGENT TXRAY_COLLECTOR="ipc://$WORK/sink.sock" TXRAY_APP=bench-http ${AGENT_ENV:-} \
      "$SERVER" serve --listen 127.0.0.1:0 --backend none --burn-us "$BURN" >"$WORK/server.out" & SERVER_PID=$!
  else
    "$SERVER" serve --listen 127.0.0.1:0 --backend none --burn-us "$BURN" >"$WORK/server.out" & SERVER_PID=$!
  fi
  for _ in $(seq 100); do
    PORT=$(awk '/listening on/ {print $NF}' "$WORK/server.out")
    [ -n "$PORT" ] && return 0
    sleep 0.05
  done
  echo "server did not start" >&2; exit 1
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime of every thread, in clock ticks

run_one() {  # $1 = bare|agent; prints "rps server-cpu-us-per-request"
  start_server "$1"
  t0=$(cpu_ticks "$SERVER_PID")
  out=$("$LOADGEN" --port "$PORT" --connections "$CONNS" --seconds "$SECS" --path /hello --sink "ipc://$WORK/sink.sock")
  t1=$(cpu_ticks "$SERVER_PID")
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  echo "$out" | awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" '/^requests/ {printf "%s %.1f\n", $6, 1e6 * t / hz / $2}'
  echo "$1: $out" | tr '\n' ' ' >>"$WORK/log"; echo >>"$WORK/log"
}

for BURN in $BURN_LIST; do
  bare=(); agent=(); bare_cpu=(); agent_cpu=(); clk=()
  for r in $(seq "$ROUNDS"); do
    read -r rps cpu <<<"$(run_one bare)"; bare+=("$rps"); bare_cpu+=("$cpu")
    read -r rps cpu <<<"$(run_one agent)"; agent+=("$rps"); agent_cpu+=("$cpu")
    if [ -x "$CLOCK" ]; then clk+=("$("$CLOCK" | awk '/^clock_gettime/ {print $2}')"); fi
  done
  median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
  mb=$(median "${bare[@]}"); ma=$(median "${agent[@]}")
  mbc=$(median "${bare_cpu[@]}"); mac=$(median "${agent_cpu[@]}")
  echo "http_server: txray-burner (no back-end, $BURN us of CPU per request), $CONNS keep-alive connections${AGENT_ENV:+, agent with $AGENT_ENV}, ${SECS}s per run, $ROUNDS rounds alternating"
  echo "  bare  req/s: ${bare[*]}"
  echo "  agent req/s: ${agent[*]}"
  echo "  bare  server CPU us/request: ${bare_cpu[*]}"
  echo "  agent server CPU us/request: ${agent_cpu[*]}"
  printf '  median bare %s req/s, agent %s req/s: agent keeps %s%% of bare throughput (target >= 97%%)\n' \
    "$mb" "$ma" "$(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.1f", 100 * a / b}')"
  printf '  median server CPU per request: bare %s us, agent %s us (agent adds %s us, all its threads included)\n' \
    "$mbc" "$mac" "$(awk -v a="$mac" -v b="$mbc" 'BEGIN {printf "%.1f", a - b}')"
  if [ ${#clk[@]} -gt 0 ]; then
    mclk=$(median "${clk[@]}")
    awk -v a="$mac" -v b="$mbc" -v c="$mclk" 'BEGIN {
      printf "  one CLOCK_THREAD_CPUTIME_ID read (median of the rounds) %.0f ns: added / (2 x clock read) = %.2f (target <= 1.5)\n", c, 1000 * (a - b) / (2 * c) }'
  fi
  grep -h "sink messages" "$WORK/log" | tail -1 | sed 's/^/  last agent run: /' || true
done
