#!/usr/bin/env bash
# Runs one agent fuzz target for a bounded time (make test): a fresh work corpus in the build dir, the
# committed seeds beside it (read, never written), crash/leak/timeout inputs saved in the work dir.
# usage: run_fuzz.sh <fuzz binary> <seed dir> <work dir> <seconds> <max_len>
set -euo pipefail
fuzz=$1 seeds=$2 work=$3 secs=$4 max_len=$5
rm -rf "$work"
mkdir -p "$work/corpus"
exec "$fuzz" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds"
