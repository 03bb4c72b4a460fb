#!/usr/bin/env bash
# Runs every benchmark: each bench/<name>/run.sh gets the build dir and prints its figures side by side
# with its baseline. Results are recorded by hand in docs/performance.md with this command.
set -euo pipefail
BUILD_DIR=$(realpath "${1:-build}")
cd "$(dirname "$0")/.."
status=0
for run in bench/*/run.sh; do
  name=$(basename "$(dirname "$run")")
  if [ -n "${TXRAY_BENCH:-}" ] && [[ ",$TXRAY_BENCH," != *",$name,"* ]]; then continue; fi
  echo "=== bench/$name"
  if ! bash "$run" "$BUILD_DIR"; then
    echo "bench/$name: FAILED"
    status=1
  fi
  echo
done
exit $status
