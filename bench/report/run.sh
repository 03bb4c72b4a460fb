#!/usr/bin/env bash
# Benchmark of `txray report` over a 1,000,000-transaction store (target: under 10 s per report).
# The store is generated once with txray-gen-store (fixed seed and end time, so every run reads the same
# data) and cached in /tmp. Each figure is the median of 3 runs, printed beside a baseline measured in
# the same run: sqlite3 reading the same columns the report reads (the floor for any report).
# Usage: bench/report/run.sh <build-dir>
set -euo pipefail
BUILD_DIR=$(realpath "${1:-build}")
TXRAY="$BUILD_DIR/bin/txray"
GEN="$BUILD_DIR/bin/txray-gen-store"
N=${TXRAY_BENCH_REPORT_N:-1000000}
DB=${TXRAY_BENCH_REPORT_DB:-/tmp/txray-bench-report-$N.db}
TARGET_S=10
RUNS=3
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

for b in "$TXRAY" "$GEN"; do
  [ -x "$b" ] || { echo "bench/report: $b not built (cmake --build $BUILD_DIR --target txray txray-gen-store)"; exit 1; }
done
if [ ! -s "$DB" ] || [ "$(sqlite3 "$DB" 'SELECT count(*) FROM transactions' 2>/dev/null || echo 0)" != "$N" ]; then
  echo "generating $N transactions into $DB (once; cached)"
  "$GEN" --db "$DB" --transactions "$N" --seed 1 --end-unix-ns 1796032800000000000 --force
fi
rows=$(sqlite3 "$DB" 'SELECT (SELECT count(*) FROM transactions) || " transactions, " || (SELECT count(*) FROM steps) || " steps"')
echo "store: $DB ($rows, $(du -m "$DB" | cut -f1) MB)"

# Runs a command RUNS times; prints "<median wall s> <median CPU s>" (CPU = user + sys). The CPU figure
# stays meaningful when other work shares the machine; the wall figure is the one the target is about.
median() {
  local walls=() cpus=() f
  f=$(mktemp)
  for _ in $(seq $RUNS); do
    /usr/bin/time -f "%e %U %S" -o "$f" "$@" > /dev/null
    read -r w u s < "$f"
    walls+=("$w")
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')")
  done
  rm -f "$f"
  local mid=$(( (RUNS + 1) / 2 ))
  echo "$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "${mid}p") $(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "${mid}p")"
}

read -r baseline baseline_cpu < <(median sqlite3 "$DB" \
  "SELECT count(*), sum(elapsed_ns), sum(cpu_ns), max(length(name)) FROM transactions;
   SELECT count(*), sum(elapsed_ns), sum(rows) FROM steps WHERE kind IN ('SQL', 'HTTP_CALL');")
echo "baseline (sqlite3 reads the same columns): ${baseline} s wall, ${baseline_cpu} s CPU"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
printf '%-28s %8s %8s %9s %8s\n' "report" "wall s" "CPU s" "target s" "vs base"
for spec in "md" "json" "html" "csv:$OUT/csv" "md --name checkout" "json --since 1796031900"; do
  fmt=${spec%% *}
  extra=""
  [ "$fmt" != "$spec" ] && extra=${spec#* }
  if [[ $fmt == csv:* ]]; then
    args=(--format csv -o "${fmt#csv:}")
    label="csv (7 files)"
  else
    args=(--format "$fmt" -o "$OUT/r.$fmt")
    label="$fmt${extra:+ $extra}"
  fi
  # shellcheck disable=SC2086
  read -r t cpu < <(median "$TXRAY" report --db "$DB" "${args[@]}" $extra)
  verdict=$(awk -v t="$t" -v g="$TARGET_S" 'BEGIN { print (t < g) ? "ok" : "OVER TARGET" }')
  ratio=$(awk -v t="$t" -v b="$baseline" 'BEGIN { printf "%.1fx", (b > 0) ? t / b : 0 }')
  printf '%-28s %8s %8s %9s %8s  %s\n' "$label" "$t" "$cpu" "< $TARGET_S" "$ratio" "$verdict"
done
echo "phases of one json report (TXRAY_REPORT_TIMING=1):"
TXRAY_REPORT_TIMING=1 "$TXRAY" report --db "$DB" --format json -o "$OUT/r.json" 2>&1 | sed 's/^/  /'
