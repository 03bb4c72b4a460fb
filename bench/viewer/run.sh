#!/usr/bin/env bash
# Viewer benchmark: open -> first complete scatter, box of 100,000 dots -> list, profile, and the UI
# thread's longest busy stretch with 2,000 transactions/s arriving in live mode, on a generated store of
# 1,000,000 transactions (cached in /tmp between runs; TXRAY_BENCH_VIEWER_DB overrides the path).
set -euo pipefail
BUILD=$(realpath "${1:-build}")
DB=${TXRAY_BENCH_VIEWER_DB:-/tmp/txray-bench-viewer-1m.db}
N=1000000
for bin in txray-gen-store txray-viewer-bench; do
  if [ ! -x "$BUILD/bin/$bin" ]; then echo "bench/viewer: $BUILD/bin/$bin not built"; exit 1; fi
done
count=$(/usr/bin/sqlite3 "$DB" "SELECT COUNT(*) FROM transactions" 2>/dev/null || echo 0)
if [ "$count" != "$N" ]; then
  echo "generating $N transactions into $DB (cached for the next runs)"
  "$BUILD/bin/txray-gen-store" --db "$DB" --transactions $N --seed 1 --span-seconds 3600 --force
fi
# Warm the page cache the same way for every run (the first figure is about the viewer, not the disk).
cat "$DB" > /dev/null
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/txray-runtime-$(id -u)}; mkdir -p -m 700 "$XDG_RUNTIME_DIR"
QT_QPA_PLATFORM=offscreen "$BUILD/bin/txray-viewer-bench" "$DB" 2> >(grep -v propagateSizeHints >&2)
