#!/usr/bin/env bash
# CPU per request of nginx + php-fpm (FastCGI) and nginx + uWSGI (uwsgi), bare and under the agent:
# run.py does the work (it starts its own servers and collector).
# Usage: bench/gateway/run.sh BUILD_DIR  (env: N, ROUNDS, CASES=fastcgi,uwsgi)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "${1:-build}"
