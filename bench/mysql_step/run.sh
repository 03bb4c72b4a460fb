#!/usr/bin/env bash
# Cost of one MySQL/MariaDB statement under the agent: run.py does the work (it starts its own MariaDB
# server and collector). Usage: bench/mysql_step/run.sh BUILD_DIR  (env: N, ROUNDS, BATCH, CG_N, CALLGRIND)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "${1:-build}"
