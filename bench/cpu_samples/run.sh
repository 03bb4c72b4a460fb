#!/usr/bin/env bash
# The CPU samplers' cost (issue 11), both samplers side by side in one run, alternating variants:
#   off      TXRAY_CPU_SAMPLES=0
#   signal   the signal sampler (TXRAY_CPU_SAMPLER=signal): a sample every 10 ms of thread CPU, the
#            thread's timer kept armed between transactions (TXRAY_CPU_SAMPLE_ARM=keep)
#   tx       the signal sampler, its timer armed at each begin and disarmed at each end (ARM=tx)
#   perf     the perf_event_open sampler (TXRAY_CPU_SAMPLER=perf): a sample every 10 ms of thread CPU,
#            8 KiB of user stack copied by the kernel, unwound on the agent thread
#   1ms      signal, a sample every 1 ms (ten times the default: shows what one sample costs)
#   perf1ms  perf, a sample every 1 ms
# 1. CPU clocks (not wall time: this shared 2-core VM is too noisy for a 2% question):
#    txray-bench-cpu-begin-end, N transactions on one thread with the C API, each 0 or 2000k loop
#    iterations (~2.5 ms) of work; the thread's and the process's CPU per transaction (agent thread
#    included: symbols, attribution, encoding), medians of ROUNDS.
# 2. Throughput, the issue's figure: the burner sample (serve, no back-end, BURN_US of CPU per request)
#    at saturation, CONNS keep-alive connections, SECONDS_PER_RUN per run; target: on keeps >= 98% of off.
# A collector (txray collect, a temporary store) takes what the agent sends in part 1; the load
# generator's PULL sink in part 2.
# Usage: bench/cpu_samples/run.sh BUILD_DIR   (env: ROUNDS=5 SECONDS_PER_RUN=3 CONNS=2 BURN_US=10000)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
SERVER=$BUILD/bin/txray-burner
LOADGEN=$BUILD/bin/txray-bench-loadgen
AGENT=$BUILD/lib/libtxray-agent.so
ROUNDS=${ROUNDS:-5}
SECS=${SECONDS_PER_RUN:-3}
CONNS=${CONNS:-2}
BURN_LIST=${BURN_US:-10000}
VARIANTS=(off signal perf tx)
COLLECTOR_PID=
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$COLLECTOR_PID" ]; then kill "$COLLECTOR_PID" 2>/dev/null || true; wait "$COLLECTOR_PID" 2>/dev/null || true; fi
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

start_server() {  # $1 = a variant; sets SERVER_PID and PORT
  : >"$WORK/server.out"
  local env; read -ra env <<<"$(variant_env "$1")"
  env "${env[@]}" LD_PRELOAD="$AGENT" TXRAY_COLLECTOR="ipc://$WORK/sink.sock" TXRAY_APP=bench-cpu \
    "$SERVER" serve --listen 127.0.0.1:0 --backend none --burn-us "$BURN" >"$WORK/server.out" & SERVER_PID=$!
  for _ in $(seq 100); do
    PORT=$(awk '/listening on/ {print $NF}' "$WORK/server.out")
    [ -n "$PORT" ] && return 0
    sleep 0.05
  done
  echo "server did not start" >&2; exit 1
}

variant_env() {
  case "$1" in
    off) echo TXRAY_CPU_SAMPLES=0 ;;
    signal) echo TXRAY_CPU_SAMPLES=1 TXRAY_CPU_SAMPLER=signal ;;
    tx) echo TXRAY_CPU_SAMPLES=1 TXRAY_CPU_SAMPLER=signal TXRAY_CPU_SAMPLE_ARM=tx ;;
    perf) echo TXRAY_CPU_SAMPLES=1 TXRAY_CPU_SAMPLER=perf ;;
    1ms) echo TXRAY_CPU_SAMPLES=1 TXRAY_CPU_SAMPLER=signal TXRAY_CPU_SAMPLE_MS=1 ;;
    perf1ms) echo TXRAY_CPU_SAMPLES=1 TXRAY_CPU_SAMPLER=perf TXRAY_CPU_SAMPLE_MS=1 ;;
  esac
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_one() {  # $1 = variant; prints "rps server-cpu-us-per-request"
  start_server "$1"
  t0=$(cpu_ticks "$SERVER_PID")
  out=$("$LOADGEN" --port "$PORT" --connections "$CONNS" --seconds "$SECS" --path /hello --sink "ipc://$WORK/sink.sock")
  t1=$(cpu_ticks "$SERVER_PID")
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  echo "$out" | awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" '/^requests/ {printf "%s %.1f\n", $6, 1e6 * t / hz / $2}'
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ---- 1. CPU per transaction ----
"$BUILD/bin/txray" collect --listen "ipc://$WORK/collect.sock" --db "$WORK/bench.db" --status-interval 0 2>/dev/null &
COLLECTOR_PID=$!
sleep 0.5
for WORK_K in 0 2000; do
  n=$([ "$WORK_K" = 0 ] && echo 20000 || echo 300)
  declare -A th=() pr=()
  for r in $(seq "$ROUNDS"); do
    for v in off signal tx perf 1ms perf1ms; do
      read -ra env <<<"$(variant_env "$v")"
      out=$(env "${env[@]}" LD_PRELOAD="$AGENT" TXRAY_COLLECTOR="ipc://$WORK/collect.sock" TXRAY_APP=bench-cpu \
        "$BUILD/bin/txray-bench-cpu-begin-end" "$n" "$WORK_K")
      th[$v]="${th[$v]:-} $(echo "$out" | awk '{print $2}')"; pr[$v]="${pr[$v]:-} $(echo "$out" | awk '{print $4}')"
    done
  done
  echo "cpu_samples: $n transactions of ${WORK_K}k loop iterations each (C API, one thread), $ROUNDS rounds alternating"
  # shellcheck disable=SC2086
  toff=$(median ${th[off]}); poff=$(median ${pr[off]})
  for v in off signal tx perf 1ms perf1ms; do
    # shellcheck disable=SC2086
    t=$(median ${th[$v]}); p=$(median ${pr[$v]})
    case "$v" in 1ms | perf1ms) period=1000 ;; *) period=10000 ;; esac
    # Added process CPU per sample: the samples a transaction gets are its thread CPU / the period.
    per=$(awk -v a="$p" -v b="$poff" -v t="$toff" -v per="$period" 'BEGIN {s = t / per; if (s < 0.05 || b == a) print "-"; else printf "%.1f", (a - b) / s}')
    printf '  %-7s thread CPU us/tx median %s (%+.2f, %+.2f%%)  process CPU us/tx median %s (%+.2f, %+.2f%%)  us/sample %s   [thread: %s]\n' "$v" \
      "$t" "$(awk -v a="$t" -v b="$toff" 'BEGIN {print a - b}')" "$(awk -v a="$t" -v b="$toff" 'BEGIN {print 100 * (a - b) / b}')" \
      "$p" "$(awk -v a="$p" -v b="$poff" 'BEGIN {print a - b}')" "$(awk -v a="$p" -v b="$poff" 'BEGIN {print 100 * (a - b) / b}')" "$per" "${th[$v]# }"
  done
  unset th pr
done
kill "$COLLECTOR_PID"; wait "$COLLECTOR_PID" 2>/dev/null || true; COLLECTOR_PID=
samples=$(sqlite3 "$WORK/bench.db" "SELECT coalesce(sum(samples), 0) FROM cpu_tx" 2>/dev/null || echo "?")
echo "  (samples stored from part 1: $samples)"

# ---- 2. Throughput of the burner sample ----

for BURN in $BURN_LIST; do
  declare -A rps=() cpu=()
  for r in $(seq "$ROUNDS"); do
    for v in "${VARIANTS[@]}"; do
      read -r x c <<<"$(run_one "$v")"
      rps[$v]="${rps[$v]:-} $x"; cpu[$v]="${cpu[$v]:-} $c"
    done
  done
  echo "cpu_samples: txray-burner under the agent ($BURN us of CPU per request), $CONNS keep-alive connections, ${SECS}s per run, $ROUNDS rounds alternating ${VARIANTS[*]}"
  for v in "${VARIANTS[@]}"; do
    # shellcheck disable=SC2086
    printf '  %-7s req/s: %s   server CPU us/request: %s\n' "$v" "${rps[$v]# }" "${cpu[$v]# }"
  done
  # shellcheck disable=SC2086
  moff=$(median ${rps[off]}); coff=$(median ${cpu[off]})
  for v in "${VARIANTS[@]}"; do
    [ "$v" = off ] && continue
    # shellcheck disable=SC2086
    m=$(median ${rps[$v]}); c=$(median ${cpu[$v]})
    printf '  median %-7s req/s %s (%s%% of off; target >= 98%%), server CPU us/request %s (%+.1f vs off %s)\n' "$v" "$m" \
      "$(awk -v a="$m" -v b="$moff" 'BEGIN {printf "%.1f", 100 * a / b}')" "$c" \
      "$(awk -v a="$c" -v b="$coff" 'BEGIN {print a - b}')" "$coff"
  done
  unset rps cpu
done
