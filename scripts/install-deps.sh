#!/usr/bin/env bash
# Installs the Debian 12 packages txray needs to build, test and benchmark.
# Idempotent: packages already present are not touched, and apt-get runs only when something is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  libunwind-dev libprotobuf-dev protobuf-compiler
  libzmq3-dev cppzmq-dev libsodium-dev
  libsqlite3-dev sqlite3
  qt6-base-dev libqt6sql6-sqlite libgl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  zlib1g-dev libcurl4-openssl-dev libssl-dev libpq-dev
  postgresql-15 postgresql-client-15
  libmariadb-dev mariadb-server mariadb-client   # MySQL/MariaDB hooks' header; the server tests/e2e/test_mariadb.py starts
  python3-mysqldb python3-pymysql                # Python MySQL drivers of test_mariadb (C over libmariadb; pure Python)
  curl python3 procps
  nginx openjdk-17-jdk-headless   # fronts of the attribution tests (tests/e2e/test_attr_*.py)
  nodejs                          # bench/node_hints (Node.js >= 18; the machine has 20)
  wrk apache2-utils git           # programs of the compatibility matrix (tests/e2e/test_compat_*.py; ab is in apache2-utils)
  chromium
  clang libclang-rt-14-dev
  lintian systemd                 # packaging tests: lintian on the .debs, systemd-analyze verify on the units
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
