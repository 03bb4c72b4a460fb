#!/usr/bin/env bash
# Cost of one MySQL statement, libmariadb-hooked vs wire-parsed: run.py does the work (it starts its own
# MariaDB server and collector). Usage: bench/wire_mysql/run.sh BUILD_DIR  (env: N, ROUNDS)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "${1:-build}"
