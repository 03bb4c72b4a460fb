#!/usr/bin/env bash
# Installs the Debian 12 packages txray needs to build it and run the demo; with --test, also those the
# test suite adds.
# Idempotent: packages already present are not touched, and apt-get runs only when something is missing.
set -euo pipefail

# Two sets. BUILD_PKGS: what building txray, running it and `make demo` need (`make build`, `make demo`).
# TEST_PKGS: what the test suite adds - servers, runtimes and tools the tests drive (`make test`, .ci/run:
# `install-deps.sh --test` installs both). GoogleTest and Google Benchmark are in the first set: the
# default configure (TXRAY_BUILD_TESTS, TXRAY_BUILD_BENCH) needs them, and they are small.
BUILD_PKGS=(
  build-essential cmake ninja-build pkg-config
  libunwind-dev libprotobuf-dev protobuf-compiler
  libzmq3-dev cppzmq-dev libsodium-dev
  libsqlite3-dev sqlite3
  qt6-base-dev libqt6sql6-sqlite libgl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  zlib1g-dev libcurl4-openssl-dev libssl-dev libpq-dev   # libcurl + zlib: the collector's OTLP/HTTP export
  libmariadb-dev                  # the MySQL/MariaDB hooks' header; the orders sample's MariaDB back-end
  libnghttp2-dev                  # the agent's HPACK decoder for HTTP/2 (linked statically: agent/CMakeLists.txt)
  curl python3 procps
  python3-grpcio                  # the demo's gRPC pair (samples/grpc_pair; the demo leaves it out without)
)
TEST_PKGS=(
  postgresql-15 postgresql-client-15
  mariadb-server mariadb-client   # the server tests/e2e/test_mariadb.py starts
  python3-mysqldb python3-pymysql                # Python MySQL drivers of test_mariadb (C over libmariadb; pure Python)
  strace                          # reliability.test_exit_cost counts the system calls of forked children
  valgrind                        # samples.test_orders counts instructions per call (callgrind); benches too
  nginx openjdk-17-jdk-headless   # fronts of the attribution tests (tests/e2e/test_attr_*.py)
  nodejs                          # bench/node_hints (Node.js >= 18; the machine has 20)
  wrk apache2-utils git           # programs of the compatibility matrix (tests/e2e/test_compat_*.py; ab is in apache2-utils)
  chromium
  clang libclang-rt-14-dev        # the libFuzzer targets
  openssl                         # tests/e2e/test_rpc_grpc.py: TLS certificate
  python3-h2                      # HTTP/2 server and client that do Upgrade: h2c, and python3-hpack (tests/e2e/test_rpc_h2c_upgrade.py, test_rpc_h2_tls_retry.py)
  prometheus                      # collect --metrics-listen: tests/e2e/test_metrics_prometheus.py scrapes with it; promtool checks the rules
  lintian systemd                 # packaging tests: lintian on the .debs, systemd-analyze verify on the units
  # Database drivers that speak the wire protocol themselves (tests/e2e/test_wire_*.py; node's pg and
  # mysql2 come from npm: tests/e2e/drivers)
  python3-asyncpg libpostgresql-jdbc-java libmariadb-java php8.2-cli php8.2-mysql
  php8.2-fpm php8.2-curl php8.2-pgsql uwsgi-core uwsgi-plugin-python3  # FastCGI / uwsgi fronted by nginx (tests/e2e/test_php_fpm.py, test_uwsgi.py)
  python3-pg8000                  # a pure-Python PostgreSQL driver with TLS through Python's ssl (OpenSSL): test_wire_tls.py
  # Caches and their clients (tests/e2e/test_cache_*.py; node-redis comes from npm: tests/e2e/drivers)
  redis-server redis-tools python3-redis php8.2-redis   # redis-cli and redis-benchmark speak through hiredis
  memcached libmemcached-tools python3-pymemcache
)

WITH_TESTS=0
case "${1:-}" in
  --test) WITH_TESTS=1 ;;
  "") ;;
  *) echo "usage: install-deps.sh [--test]" >&2; exit 2 ;;
esac
PKGS=("${BUILD_PKGS[@]}")
if [ $WITH_TESTS -eq 1 ]; then PKGS+=("${TEST_PKGS[@]}"); fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

[ $WITH_TESTS -eq 1 ] || exit 0  # the rest is for the tests only

# The OTLP receiver of the export tests (tests/e2e/otlp/receiver.js) decodes with the official
# OpenTelemetry definitions: the generated protobuf root of @opentelemetry/otlp-transformer, at the
# version (and dependencies) pinned by tests/e2e/otlp/package-lock.json. npm ci into that folder when
# what is there is not that version.
# The Node.js database drivers of the wire-protocol tests (tests/e2e/drivers: pg, mysql2) likewise, at
# the versions tests/e2e/drivers/package-lock.json pins.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npm_tree() {  # folder, package whose installed version tells whether the tree is the pinned one
  local dir="$ROOT/$1" pkg="$2"
  if node -e '
    const [dir, pkg] = process.argv.slice(1);
    const want = require(dir + "/package.json").dependencies[pkg];
    let have = null;
    try { have = require(dir + "/node_modules/" + pkg + "/package.json").version; } catch {}
    process.exit(have === want ? 0 : 1);' "$dir" "$pkg" 2>/dev/null; then
    return 0
  fi
  if ! command -v npm >/dev/null; then  # NodeSource's nodejs brings npm; Debian's has it apart
    SUDO=""; if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "install-deps: npm ci in $1 ($pkg)"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
}
npm_tree tests/e2e/otlp @opentelemetry/otlp-transformer
npm_tree tests/e2e/drivers pg
