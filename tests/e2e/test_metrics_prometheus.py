"""`txray collect --metrics-listen` scraped by a real Prometheus (Debian's), with the rules of
packaging/prometheus/txray-rules.yml, while a service under the agent runs (tests/e2e/metrics/paced.py):
- what Prometheus holds agrees with `txray report` over the same transactions: the request count exactly,
  and the p95 that histogram_quantile computes lies in the same histogram bucket as the report's p95;
  exemplars name transactions that `txray show --id` finds; `promtool check metrics` accepts the text;
- TxrayLatencySLOBurn fires when the service is made slow on purpose and clears when it recovers, as
  Prometheus's own /api/v1/alerts says. The rules are the shipped ones with their windows shortened
  (5m -> 20s, 1h -> 40s, for -> 3s) so that this takes a minute, not hours.
Every wait is bounded; nothing is decided by a rate or a duration, only by counts, buckets and states.
"""
import bisect
import json
import os
import re
import subprocess
import threading
import time
import urllib.parse
import urllib.request

from txraytest import PYTHON, SOURCE_DIR, TXRAY, Collector, TxrayTestCase, agent_env, free_port, wait_for, wait_port

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
PACED = os.path.join(os.path.dirname(__file__), "metrics", "paced.py")
RULES = os.path.join(SOURCE_DIR, "packaging", "prometheus", "txray-rules.yml")
BOUNDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]


def bucket(seconds):
    return bisect.bisect_left(BOUNDS, seconds)


def http_get(url, headers=None, timeout=10):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


class MetricsPrometheus(TxrayTestCase):
    def prom(self, path, **params):
        status, body = http_get(f"http://127.0.0.1:{self.prom_port}{path}?{urllib.parse.urlencode(params)}")
        self.assertEqual(status, 200, path)
        return json.loads(body)["data"]

    def scalar(self, expr):
        res = self.prom("/api/v1/query", query=expr)["result"]
        return float(res[0]["value"][1]) if res else None

    def start_prometheus(self, metrics_port):
        with open(RULES) as f:
            rules = f.read()
        rules = rules.replace("[5m]", "[20s]").replace("[1h]", "[40s]")
        rules = re.sub(r"for: \d+m", "for: 3s", rules)
        rules_file = os.path.join(self.tmp, "rules.yml")
        with open(rules_file, "w") as f:
            f.write(rules)
        cfg = os.path.join(self.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [{rules_file}]
scrape_configs:
  - job_name: txray
    static_configs:
      - targets: ['127.0.0.1:{metrics_port}']
""")
        self.prom_port = free_port()
        self.prom_log = open(os.path.join(self.tmp, "prometheus.log"), "wb")
        self.addCleanup(self.prom_log.close)
        self.spawn([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={self.tmp}/tsdb",
                    f"--web.listen-address=127.0.0.1:{self.prom_port}", "--enable-feature=exemplar-storage",
                    "--log.level=warn"], stdout=self.prom_log, stderr=subprocess.STDOUT)
        wait_port(self.prom_port, timeout=60)
        # The port opens before the storage is: the API answers 503 until /-/ready says 200 (seen under
        # a parallel make test).
        wait_for(lambda: http_get(f"http://127.0.0.1:{self.prom_port}/-/ready")[0] == 200, timeout=60, interval=0.2,
                 what="prometheus ready")
        wait_for(lambda: any(t["health"] == "up" for t in self.prom("/api/v1/targets")["activeTargets"]),
                 timeout=60, interval=0.5, what="prometheus scraping the collector")

    def test_prometheus_agrees_with_report_and_alerts_fire_and_clear(self):
        metrics_port = free_port()
        with Collector(self.tmp, extra_args=["--metrics-listen", f"127.0.0.1:{metrics_port}"]) as col:
            wait_port(metrics_port)
            port = free_port()
            self.spawn([PYTHON, PACED, str(port)], env=agent_env(col.endpoint, app="paced"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)
            self.start_prometheus(metrics_port)

            # 1. Known work: 30 requests of 30 ms (the 25-50 ms bucket), 10 of 150 ms (100-250 ms), 2 failures.
            for ms in [30] * 30 + [150] * 10:
                self.assertEqual(http_get(f"http://127.0.0.1:{port}/work?ms={ms}")[0], 200)
            for _ in range(2):
                self.assertEqual(http_get(f"http://127.0.0.1:{port}/fail")[0], 500)
            q = 'sum(txray_requests_total{app="paced"})'
            wait_for(lambda: self.scalar(q) == 42, timeout=60, interval=0.5, what="42 requests in prometheus")
            rep = json.loads(subprocess.run([TXRAY, "report", "--db", col.db, "--app", "paced", "--format", "json"],
                                            check=True, capture_output=True, text=True, timeout=60).stdout)
            summary = rep["summary"]
            self.assertEqual(summary["transactions"], 42)
            self.assertEqual(summary["errors"], 2)
            self.assertEqual(self.scalar('sum(txray_requests_total{app="paced",code="5xx"})'), 2)
            p95 = self.scalar('histogram_quantile(0.95, sum by (le) (txray_request_duration_seconds_bucket{app="paced"}))')
            self.assertEqual(bucket(p95), bucket(summary["p95_ms"] / 1000), (p95, summary["p95_ms"]))
            self.assertGreaterEqual(bucket(p95), bucket(0.150))  # the 150 ms requests cannot be faster
            # Exemplars: transactions the store has.
            now = time.time()
            ex = self.prom("/api/v1/query_exemplars", query='txray_request_duration_seconds_bucket{app="paced"}',
                           start=now - 600, end=now + 60)
            txids = {e["labels"]["txid"] for s in ex for e in s["exemplars"]}
            self.assertTrue(txids, "exemplars stored")
            for txid in list(txids)[:3]:
                shown = subprocess.run([TXRAY, "show", "--db", col.db, "--id", txid], capture_output=True, text=True,
                                       timeout=60)
                self.assertEqual(shown.returncode, 0, shown.stderr)
                self.assertIn(txid, shown.stdout)
            # The text format passes promtool's linter (the OpenMetrics form is what Prometheus just parsed).
            status, text = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
            self.assertEqual(status, 200)
            lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
            self.assertNotIn("error", (lint.stdout + lint.stderr).lower())

            # 2. The alert: slow (600 ms, past the SLO's 0.5 s) until it fires, then fast until it clears.
            pace = {"ms": 600}
            stop = threading.Event()

            def load():
                while not stop.is_set():
                    http_get(f"http://127.0.0.1:{port}/work?ms={pace['ms']}", timeout=30)

            threads = [threading.Thread(target=load) for _ in range(2)]
            for t in threads:
                t.start()
            try:
                def state():
                    alerts = self.prom("/api/v1/alerts")["alerts"]
                    return {a["state"] for a in alerts
                            if a["labels"].get("alertname") == "TxrayLatencySLOBurn" and a["labels"].get("app") == "paced"}

                wait_for(lambda: "firing" in state(), timeout=180, interval=1, what="TxrayLatencySLOBurn firing")
                pace["ms"] = 5
                wait_for(lambda: not state(), timeout=240, interval=1, what="TxrayLatencySLOBurn cleared")
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=60)
