#!/usr/bin/env bash
# make soak: the long variants of the reliability tests, each a test of `make test` run for longer.
#   collector kill -9 while agents stream: TXRAY_KILLS kills (default 200) with TXRAY_KILL_SECONDS (200) of collector up-time
#   collector stopped under a traced service's load: TXRAY_OUTAGE_SECONDS (default 60) away; here its
#   throughput and CPU per request are held to the collector-up phase (TXRAY_OUTAGE_MIN_RATIO 0.4,
#   TXRAY_OUTAGE_MAX_CPU 1.3), which `make test` only prints
#   processes and threads (tests/reliability): TXRAY_REL_FORKS forks with transactions open (1000),
#   TXRAY_REL_THREADS short-lived threads (10000), TXRAY_REL_STORM_CALLS calls under a SIGALRM storm (100000),
#   TXRAY_REL_EXIT_RUNS exits from a signal handler per mode (200), TXRAY_REL_CHILDREN forked children with
#   the collector down (1000), then bench/exit_cost with as many: their wall and CPU time beside bare's
#   load shedding: agents at 5x a throttled store for TXRAY_SHED_SECONDS (default 60)
# Usage: scripts/soak.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
export TXRAY_BUILD_DIR="$build" TXRAY_SOURCE_DIR="$root" PYTHONDONTWRITEBYTECODE=1
export TXRAY_KILLS="${TXRAY_KILLS:-200}" TXRAY_KILL_SECONDS="${TXRAY_KILL_SECONDS:-200}"
export TXRAY_OUTAGE_SECONDS="${TXRAY_OUTAGE_SECONDS:-60}"
export TXRAY_OUTAGE_MIN_RATIO="${TXRAY_OUTAGE_MIN_RATIO:-0.4}" TXRAY_OUTAGE_MAX_CPU="${TXRAY_OUTAGE_MAX_CPU:-1.3}"
export TXRAY_REL_FORKS="${TXRAY_REL_FORKS:-1000}" TXRAY_REL_THREADS="${TXRAY_REL_THREADS:-10000}"
export TXRAY_REL_STORM_CALLS="${TXRAY_REL_STORM_CALLS:-100000}" TXRAY_REL_EXIT_RUNS="${TXRAY_REL_EXIT_RUNS:-200}"
export TXRAY_REL_CHILDREN="${TXRAY_REL_CHILDREN:-1000}"
export TXRAY_SHED_SECONDS="${TXRAY_SHED_SECONDS:-60}"
cd "$root/tests/e2e"
echo "== soak: collector kill -9 x $TXRAY_KILLS over ${TXRAY_KILL_SECONDS}s"
/usr/bin/python3 -m unittest -v test_collector_kill
cd "$root/tests/reliability"
export PYTHONPATH="$root/tests/e2e${PYTHONPATH:+:$PYTHONPATH}"
echo "== soak: collector stopped for ${TXRAY_OUTAGE_SECONDS}s under a traced service's load"
/usr/bin/python3 -m unittest -v test_collector_outage
echo "== soak: fork x $TXRAY_REL_FORKS, fork+exec/vfork/posix_spawn; $TXRAY_REL_THREADS short-lived threads"
/usr/bin/python3 -m unittest -v test_forks test_threads
echo "== soak: $TXRAY_REL_STORM_CALLS calls under SIGALRM every 100 us; exit() from a handler x $TXRAY_REL_EXIT_RUNS"
/usr/bin/python3 -m unittest -v test_signals
echo "== soak: $TXRAY_REL_CHILDREN forked children with the collector down"
/usr/bin/python3 -m unittest -v test_exit_cost
CHILDREN="$TXRAY_REL_CHILDREN" ROUNDS="${ROUNDS:-3}" bash "$root/bench/exit_cost/run.sh" "$build"
echo "== soak: load shedding, agents at 5x a throttled store for ${TXRAY_SHED_SECONDS}s"
/usr/bin/python3 -m unittest -v test_shedding
