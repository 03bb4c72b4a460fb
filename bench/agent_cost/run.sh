#!/usr/bin/env bash
# The agent's own cost, estimated vs measured (issue 14): does the AGENT COST the profiles carry match
# what the agent really adds to a request?
#
# Server: txray-burner serve with no back-end and an empty handler (BURN_US=0), CONNS keep-alive
# connections from txray-bench-loadgen for SECONDS_PER_RUN per run, ROUNDS rounds alternating bare and
# under the agent (sending to a real `txray collect`). Measured: the server's CPU per request (utime +
# stime of all its threads, the agent thread included, from /proc/PID/stat), agent median minus bare
# median. Estimated: the mean agent_cost_ns of the transactions the agent runs stored (table agent_cost).
# Printed: both, and estimate / measured (target 0.7 - 1.3).
#
# With CALLGRIND=1 (valgrind), also the instructions the agent adds per request (callgrind, all threads,
# user space), converted to ns with a calibration run natively and under callgrind on the agent's own
# request cycle (txray-bench-agent-cost-cycle: ns per instruction of the agent's code on this host), plus
# the thread-CPU clock reads each transaction makes (system calls, which callgrind does not see), at
# their measured price. Load-independent, for a noisy shared machine.
#
# Usage: bench/agent_cost/run.sh BUILD_DIR   (env: ROUNDS=5 SECONDS_PER_RUN=3 CONNS=4 BURN_US=0 CALLGRIND=1)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
SERVER=$BUILD/bin/txray-burner
LOADGEN=$BUILD/bin/txray-bench-loadgen
TXRAY=$BUILD/bin/txray
CYCLE=$BUILD/bin/txray-bench-agent-cost-cycle
AGENT=$BUILD/lib/libtxray-agent.so
ROUNDS=${ROUNDS:-5}
SECS=${SECONDS_PER_RUN:-3}
CONNS=${CONNS:-4}
BURN=${BURN_US:-0}
CALLGRIND=${CALLGRIND:-1}
WORK=$(mktemp -d)
SERVER_PID=
COLLECTOR_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  if [ -n "$COLLECTOR_PID" ]; then kill "$COLLECTOR_PID" 2>/dev/null || true; wait "$COLLECTOR_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$TXRAY" collect --listen "ipc://$WORK/collector.sock" --db "$WORK/txray.db" >"$WORK/collector.log" 2>&1 &
COLLECTOR_PID=$!

start_server() {  # $1 = bare|agent, then a prefix command (valgrind …) if any; sets SERVER_PID and PORT
  local mode=$1; shift
  : >"$WORK/server.out"
  if [ "$mode" = agent ]; then
    env LD_PRELOAD="$AGENT" TXRAY_COLLECTOR="ipc://$WORK/collector.sock" TXRAY_APP=bench-agent-cost \
      "$@" "$SERVER" serve --listen 127.0.0.1:0 --backend none --burn-us "$BURN" >"$WORK/server.out" 2>"$WORK/server.err" &
  else
    "$@" "$SERVER" serve --listen 127.0.0.1:0 --backend none --burn-us "$BURN" >"$WORK/server.out" 2>"$WORK/server.err" &
  fi
  SERVER_PID=$!
  for _ in $(seq 400); do
    PORT=$(awk '/listening on/ {print $NF}' "$WORK/server.out")
    [ -n "$PORT" ] && return 0
    sleep 0.05
  done
  echo "server did not start" >&2; cat "$WORK/server.err" >&2; exit 1
}
stop_server() { kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime of every thread, in clock ticks

run_one() {  # $1 = bare|agent; prints "rps server-cpu-us-per-request"
  start_server "$1"
  t0=$(cpu_ticks "$SERVER_PID")
  out=$("$LOADGEN" --port "$PORT" --connections "$CONNS" --seconds "$SECS" --path /hello)
  t1=$(cpu_ticks "$SERVER_PID")
  stop_server
  echo "$out" | awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" '/^requests/ {printf "%s %.2f\n", $6, 1e6 * t / hz / $2}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

bare_cpu=(); agent_cpu=()
for r in $(seq "$ROUNDS"); do
  read -r _ cpu <<<"$(run_one bare)"; bare_cpu+=("$cpu")
  read -r _ cpu <<<"$(run_one agent)"; agent_cpu+=("$cpu")
done
sleep 1  # the collector commits every 250 ms
est=$(sqlite3 "$WORK/txray.db" "SELECT printf('%.3f %.3f %d', avg(c.cost_ns) / 1000.0, avg(c.agent_thread_ns) / 1000.0, count(*))
  FROM agent_cost c JOIN transactions t ON t.id = c.tx_id WHERE t.app = 'bench-agent-cost' AND t.kind = 'http'")
read -r est_us est_thread_us est_n <<<"$est"
units=$(sqlite3 "$WORK/txray.db" "SELECT printf('tx %.0f ns, row %.0f ns, io %.1f ns, encode %.0f ns, clock read %.0f ns',
  avg(tx_ps) / 1000.0, avg(row_ps) / 1000.0, avg(io_ps) / 1000.0, avg(encode_tx_ps) / 1000.0, avg(cpu_clock_ps) / 1000.0)
  FROM agent_cost_units")
clock_us=$(sqlite3 "$WORK/txray.db" "SELECT printf('%.4f', avg(cpu_clock_ps) / 1e6) FROM agent_cost_units")
mb=$(median "${bare_cpu[@]}"); ma=$(median "${agent_cpu[@]}")
measured=$(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a - b}')
echo "agent_cost: txray-burner (no back-end, $BURN us of CPU per request), $CONNS keep-alive connections, ${SECS}s per run, $ROUNDS rounds alternating"
echo "  bare  server CPU us/request: ${bare_cpu[*]}"
echo "  agent server CPU us/request: ${agent_cpu[*]}"
echo "  calibrated units (medians over the agent runs): $units"
printf '  measured (/proc, medians): bare %s us, agent %s us: the agent adds %s us per request\n' "$mb" "$ma" "$measured"
printf '  estimated (AGENT COST, mean of %s transactions): %s us (agent thread %s us)\n' "$est_n" "$est_us" "$est_thread_us"
printf '  estimate / measured (/proc): %s (target 0.70 - 1.30)\n' \
  "$(awk -v e="$est_us" -v m="$measured" 'BEGIN {if (m > 0) printf "%.2f", e / m; else print "n/a (measured <= 0)"}')"

[ "$CALLGRIND" = 1 ] || exit 0
command -v valgrind >/dev/null || { echo "  callgrind: valgrind not installed, skipped"; exit 0; }
# Instructions per request under callgrind: collection switched on after a warm-up (the agent thread
# has started and calibrated by then), for a fixed time of load.
cg_one() {  # $1 = bare|agent; prints "Ir-per-request requests"
  start_server "$1" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/cg.$1.%p" -q
  "$LOADGEN" --port "$PORT" --connections 1 --seconds 2 --path /warm >/dev/null
  callgrind_control -i on "$SERVER_PID" >/dev/null
  out=$("$LOADGEN" --port "$PORT" --connections "$CONNS" --seconds "${CG_SECONDS:-6}" --path /hello)
  callgrind_control -i off "$SERVER_PID" >/dev/null
  stop_server
  n=$(echo "$out" | awk '/^requests/ {print $2}')
  ir=$(cat "$WORK"/cg."$1".* | awk '/^totals:/ {t += $2} END {print t}')
  rm -f "$WORK"/cg."$1".*
  awk -v ir="$ir" -v n="$n" 'BEGIN {printf "%.0f %d\n", ir / n, n}'
}
read -r ir_bare n_bare <<<"$(cg_one bare)"
read -r ir_agent n_agent <<<"$(cg_one agent)"
# ns per instruction of the agent's own request cycle: natively (CPU time, its two clock system calls
# taken out at their measured price) over callgrind's count of the same cycle.
read -r cyc_ns cyc_clock_ns <<<"$("$CYCLE" --cycles 20000)"
cyc_ir=$(valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.cycle" -q "$CYCLE" --cycles 2000 --count-only >/dev/null 2>&1;
         awk '/^totals:/ {t += $2} END {print t}' "$WORK/cg.cycle")
cyc_ir_base=$(valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.cycle0" -q "$CYCLE" --cycles 0 --count-only >/dev/null 2>&1;
         awk '/^totals:/ {t += $2} END {print t}' "$WORK/cg.cycle0")
awk -v ib="$ir_bare" -v ia="$ir_agent" -v nb="$n_bare" -v na="$n_agent" -v cns="$cyc_ns" -v ccl="$cyc_clock_ns" \
    -v cir="$cyc_ir" -v cir0="$cyc_ir_base" -v est="$est_us" -v eclk="$clock_us" 'BEGIN {
  per_cycle = (cir - cir0) / 2000
  ns_per_ir = (cns - 2 * ccl) / per_cycle
  added = ia - ib
  ns = added * ns_per_ir + 2 * ccl
  printf "  callgrind: bare %.0f, agent %.0f instructions per request (%d / %d requests): the agent adds %.0f\n", ib, ia, nb, na, added
  printf "  calibration: the agent request cycle = %.0f instructions, %.0f ns natively (%.0f ns of it two clock reads): %.3f ns per instruction\n", per_cycle, cns, 2 * ccl, ns_per_ir
  printf "  measured (callgrind): %.0f instructions x %.3f ns + two clock reads %.0f ns = %.2f us per request\n", added, ns_per_ir, 2 * ccl, ns / 1000
  printf "  estimate / measured (callgrind): %.2f (target 0.70 - 1.30)\n", est * 1000 / ns
  # The same without the two clock reads on either side (their price moves with the load of the machine
  # between the agent runs, whose calibration priced them, and this one).
  printf "  without the two clock reads: estimate %.2f us (its reads at %.0f ns), callgrind %.2f us: ratio %.2f\n", \
    est - 2 * eclk, eclk * 1000, added * ns_per_ir / 1000, (est - 2 * eclk) * 1000 / (added * ns_per_ir)
}'
