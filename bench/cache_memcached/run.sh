#!/usr/bin/env bash
# What the agent adds to a memcached command on the wire: run.py does the work (it starts its own
# memcached and collector). Usage: bench/cache_memcached/run.sh BUILD_DIR  (env: N, ROUNDS)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "${1:-build}"
