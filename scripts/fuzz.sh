#!/usr/bin/env bash
# make fuzz: the long runs of every libFuzzer target (docs/reliability.md). Each runs FUZZ_SECONDS (default
# 600) with a corpus that persists under the build dir between runs (BUILD/fuzz-corpus/<target>/, seeded
# from the committed tests/agent/fuzz/corpus/<target>/), FUZZ_JOBS targets at a time (default 1). Prints
# the executions of each; a crash, leak, UB report or timeout leaves its input in
# BUILD/fuzz-corpus/<target>-artifacts/ and the log in BUILD/fuzz-corpus/<target>.log, and fails the run.
# Usage: scripts/fuzz.sh [BUILD_DIR] [TARGET_REGEX]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
only="${2:-.}"
secs="${FUZZ_SECONDS:-600}"
jobs="${FUZZ_JOBS:-1}"
list="$build/fuzz-targets.txt"
work="$build/fuzz-corpus"
mkdir -p "$work"

# name binary seed_dir max_len: the agent's targets (tests/agent/fuzz/CMakeLists.txt writes the list),
# then the collector's decoder, seeded with real messages from txray-test-sender.
targets=()
if [[ -f "$list" ]]; then
  while read -r name bin seeds max_len; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    targets+=("$name $bin $seeds $max_len")
  done <"$list"
fi
if [[ -x "$build/bin/collector_fuzz_decoder" && -x "$build/bin/txray-test-sender" ]]; then
  seeds="$work/collector_fuzz_decoder-seeds"
  rm -rf "$seeds" && mkdir -p "$seeds"
  "$build/bin/txray-test-sender" --write-dir "$seeds" --transactions 6 --per-batch 2 --steps 7 --garbage 2 --invalid 1 >/dev/null
  targets+=("collector_fuzz_decoder $build/bin/collector_fuzz_decoder $seeds 65536")
fi
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no fuzz targets in $build (is clang installed? scripts/install-deps.sh)" >&2
  exit 1
fi

run_one() {
  local name=$1 bin=$2 seeds=$3 max_len=$4
  local corpus="$work/$name" art="$work/$name-artifacts" log="$work/$name.log"
  mkdir -p "$corpus" "$art"
  local rc=0
  "$bin" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  local execs rate units
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log" | tail -1)
  units=$(find "$corpus" -type f | wc -l)
  printf '%-32s %-6s %14s %10s %8s\n' "$name" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "${execs:-?}" \
    "${rate:-?}" "$units" | tee -a "$work/summary.txt"
  if [[ $rc != 0 ]]; then
    echo "  $name failed (exit $rc): $log; inputs in $art/" | tee -a "$work/summary.txt"
    grep -a -m3 -E 'ERROR|runtime error|invariant broken' "$log" | sed 's/^/    /' || true
  fi
  return $rc
}

echo "== fuzz: ${#targets[@]} targets, ${secs}s each, $jobs at a time; corpora in $work"
printf '%-32s %-6s %14s %10s %8s\n' target result executions "execs/s" corpus | tee "$work/summary.txt"
failed=0
running=0
for t in "${targets[@]}"; do
  read -r name bin seeds max_len <<<"$t"
  [[ "$name" =~ $only ]] || continue
  run_one "$name" "$bin" "$seeds" "$max_len" &
  running=$((running + 1))
  if (( running >= jobs )); then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while (( running > 0 )); do
  wait -n || failed=1
  running=$((running - 1))
done
exit $failed
