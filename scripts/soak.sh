#!/usr/bin/env bash
# make soak: the long variants of the reliability tests, each a test of `make test` run for longer.
#   collector kill -9 while agents stream: TXRAY_KILLS kills (default 200) with TXRAY_KILL_SECONDS (200) of collector up-time
#   collector stopped under a traced service's load: TXRAY_OUTAGE_SECONDS (default 60) away
# Usage: scripts/soak.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
export TXRAY_BUILD_DIR="$build" TXRAY_SOURCE_DIR="$root" PYTHONDONTWRITEBYTECODE=1
export TXRAY_KILLS="${TXRAY_KILLS:-200}" TXRAY_KILL_SECONDS="${TXRAY_KILL_SECONDS:-200}"
export TXRAY_OUTAGE_SECONDS="${TXRAY_OUTAGE_SECONDS:-60}"
cd "$root/tests/e2e"
echo "== soak: collector kill -9 x $TXRAY_KILLS over ${TXRAY_KILL_SECONDS}s"
/usr/bin/python3 -m unittest -v test_collector_kill
echo "== soak: collector stopped for ${TXRAY_OUTAGE_SECONDS}s under a traced service's load"
cd "$root/tests/reliability"
PYTHONPATH="$root/tests/e2e" /usr/bin/python3 -m unittest -v test_collector_outage
