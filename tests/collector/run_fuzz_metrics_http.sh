#!/usr/bin/env bash
# Runs the metrics request parser's fuzz target for a bounded time, seeded with real scrapes.
# usage: run_fuzz_metrics_http.sh <fuzz binary> <work dir> <seconds>
set -euo pipefail
fuzz=$1 work=$2 secs=$3
rm -rf "$work"
mkdir -p "$work/seed" "$work/corpus"
printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: Prometheus/2.42.0\r\nAccept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n' >"$work/seed/prometheus"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >"$work/seed/curl10"
printf 'HEAD / HTTP/1.1\r\nHost: x\r\n\r\n' >"$work/seed/head"
cd "$work"
exec "$fuzz" -max_total_time="$secs" -runs=5000000 -rss_limit_mb=1024 -max_len=16384 -print_final_stats=1 corpus seed
