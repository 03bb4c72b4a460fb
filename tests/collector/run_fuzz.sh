#!/usr/bin/env bash
# Runs the decoder fuzz target for a bounded time, seeded with real messages from txray-test-sender.
# usage: run_fuzz.sh <fuzz binary> <txray-test-sender> <work dir> <seconds>
set -euo pipefail
fuzz=$1 sender=$2 work=$3 secs=$4
rm -rf "$work"
mkdir -p "$work/seed" "$work/corpus"
"$sender" --write-dir "$work/seed" --transactions 6 --per-batch 2 --steps 7 --garbage 2 --invalid 1 >/dev/null
cd "$work"
exec "$fuzz" -max_total_time="$secs" -runs=2000000 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  corpus seed
