#!/usr/bin/env bash
# The exit cost of short-lived processes (forked children serving one request each, the collector down):
# wall and CPU time under the agent beside the bare run's, and the page-fault counts that explain them
# (see bench.py). reliability.test_exit_cost decides on the counts; the times are this bench's figures.
# usage: bench/exit_cost/run.sh <build dir>   (env: CHILDREN=1000 ROUNDS=5)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/bench.py" "${1:-build}"
