#!/usr/bin/env bash
# What the agent adds to a Redis command on the wire: run.py does the work (it starts its own redis-server
# and collector). Usage: bench/cache_redis/run.sh BUILD_DIR  (env: N, ROUNDS)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "${1:-build}"
