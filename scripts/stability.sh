#!/usr/bin/env bash
# make stability: the whole CTest suite repeated, to show that no test depends on the machine's load.
# RUNS quiet runs (default 5), then BUSY_RUNS runs (default 3) with BUSY_LOOPS busy loops beside them
# (`yes > /dev/null`, default 2: as many as this project's 2-core machines have cores). Each run is
# `ctest --test-dir BUILD -j JOBS --timeout 600` plus any extra arguments given after the build dir (a
# `-R REGEX` to try the script on a few tests, say). Prints per run how many tests passed and failed and
# the names of the failures, then one summary line; exits 1 if any run had a failure.
# The suite's rule (docs/reliability.md, "Test suite stability"): no wall-clock time, CPU time, rate or
# ratio decides a test; those figures live in bench/ (make bench) and make soak.
# Usage: scripts/stability.sh [BUILD_DIR [CTEST_ARGS...]]   (env: RUNS=5 BUSY_RUNS=3 BUSY_LOOPS=2 JOBS=2;
#        LOG_DIR keeps each run's CTest output, default a temporary folder, printed)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)" || exit 2
shift $(( $# > 0 ? 1 : 0 ))
extra=("$@")
RUNS=${RUNS:-5}
BUSY_RUNS=${BUSY_RUNS:-3}
BUSY_LOOPS=${BUSY_LOOPS:-2}
JOBS=${JOBS:-2}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/txray-stability-XXXXXX)}
mkdir -p "$LOG_DIR"

busy=()
stop_busy() {
  for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  busy=()
}
trap stop_busy EXIT
trap 'stop_busy; exit 130' INT TERM

total_runs=0 green_runs=0 total_failed=0
declare -A failed_names=()

one_run() {  # $1 = label ("quiet 1", "busy 2")
  local label=$1 log="$LOG_DIR/run-${1// /-}.log" t0 t1 passed failed names
  t0=$(date +%s)
  ctest --test-dir "$build" -j "$JOBS" --timeout 600 --output-on-failure "${extra[@]}" >"$log" 2>&1
  t1=$(date +%s)
  # CTest's summary: "NN% tests passed, F tests failed out of T"
  read -r failed total < <(sed -n 's/.* tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\1 \2/p' "$log" | tail -1)
  if [ -z "${total:-}" ]; then
    printf '%-8s no CTest summary (ctest exited early: see %s)\n' "$label:" "$log"
    total_runs=$((total_runs + 1)) total_failed=$((total_failed + 1))
    failed_names["(no summary)"]=$(( ${failed_names["(no summary)"]:-0} + 1 ))
    return
  fi
  passed=$((total - failed))
  names=$(sed -n '/The following tests FAILED:/,$p' "$log" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' | tr '\n' ' ')
  names=${names% }
  printf '%-8s passed %d, failed %d of %d (%d s, load average %s)%s\n' "$label:" "$passed" "$failed" "$total" \
    "$((t1 - t0))" "$(cut -d' ' -f1 /proc/loadavg)" "${names:+ — failed: $names}"
  total_runs=$((total_runs + 1))
  total_failed=$((total_failed + failed))
  [ "$failed" = 0 ] && green_runs=$((green_runs + 1))
  for n in $names; do failed_names[$n]=$(( ${failed_names[$n]:-0} + 1 )); done
}

echo "stability: $build, ctest -j $JOBS ${extra[*]}; $RUNS quiet runs, $BUSY_RUNS with $BUSY_LOOPS busy loops; logs in $LOG_DIR"
for i in $(seq 1 "$RUNS"); do one_run "quiet $i"; done
if [ "$BUSY_RUNS" -gt 0 ]; then
  for _ in $(seq 1 "$BUSY_LOOPS"); do yes >/dev/null & busy+=($!); done
  for i in $(seq 1 "$BUSY_RUNS"); do one_run "busy $i"; done
  stop_busy
fi
summary=""
for n in "${!failed_names[@]}"; do summary+=" $n (${failed_names[$n]}x)"; done
echo "stability: $green_runs of $total_runs runs green ($RUNS quiet, $BUSY_RUNS with $BUSY_LOOPS busy loops); $total_failed failures${summary:+:$summary}"
[ "$green_runs" = "$total_runs" ]
