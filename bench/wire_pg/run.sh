#!/usr/bin/env bash
# Cost of one PostgreSQL statement, libpq-hooked vs wire-parsed: run.py does the work (it starts its own
# PostgreSQL server and collector). Usage: bench/wire_pg/run.sh BUILD_DIR  (env: N, ROUNDS, BATCH, CG_N, CALLGRIND)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "${1:-build}"
