#!/usr/bin/env bash
# Collector ingest vs raw SQLite inserts of the same rows, in one run (see bench.py).
# usage: bench/collector_ingest/run.sh <build dir>
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/bench.py" "${1:-build}"
