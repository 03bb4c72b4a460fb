"""OTLP export (issue 13, must-show 1): `txray collect --otlp-endpoint` forwards what the agents send to
an OTLP/HTTP receiver that decodes with the official OpenTelemetry definitions (Node.js,
@opentelemetry/otlp-transformer's generated root; tests/e2e/otlp/receiver.js). Driven: the two-service
sample (front calls back for every request) and samples/py_sqlite_app (SQLite), both under the agent.
Checked against the store (`txray show --json`): every transaction arrived as one span with its ids,
kind, times and resource; every call row as a child span, every other row as an event, with txray.row /
gap / CPU equal to the store's; the back's SERVER spans are children of the front's CLIENT spans; the
semantic-convention attributes of the SQL and HTTP call spans. Then `txray export` of a stored range
sends the same spans again (same ids).
"""
import os
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from otlptest import SPAN_KIND, STATUS_ERROR, Receiver, otlp_status
from txraytest import (BIN, PYTHON, SOURCE_DIR, TXRAY, Collector, TxrayTestCase, agent_env, free_port,
                       send_batches, show_json, wait_for, wait_port, wait_transactions)

FRONT = os.path.join(BIN, "two_service_front")
BACK = os.path.join(BIN, "two_service_back")
SHOP = os.path.join(SOURCE_DIR, "samples", "py_sqlite_app", "app.py")
SQLITE3 = "/usr/bin/sqlite3"
ORDERS = 30
SHOP_REQUESTS = [("GET", "/items?limit=7"), ("GET", "/item/5"), ("GET", "/item/9999"), ("GET", "/search?q=item-00"),
                 ("GET", "/report"), ("POST", "/orders?item=3&qty=2"), ("GET", "/fail")] * 3
SPAN_STEPS = {"SQL", "HTTP_CALL", "DNS", "SOCKET", "DB_CONNECT"}


def get(port, path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


class OtlpExportTest(TxrayTestCase):
    def drive(self, col):
        """Both samples under the agent; returns the back-end's port."""
        bport, fport, sport = free_port(), free_port(), free_port()
        shop_db = os.path.join(self.tmp, "shop.db")
        shop = self.spawn([PYTHON, SHOP, "--port", str(sport), "--db", shop_db],
                          env=agent_env(col.endpoint, app="shop"), stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
        back = self.spawn([BACK, "--port", str(bport)], env=agent_env(col.endpoint, app="back"),
                          stdout=subprocess.DEVNULL)
        wait_port(bport)
        front = self.spawn([FRONT, "--port", str(fport), "--backend", str(bport)],
                           env=agent_env(col.endpoint, app="front"), stdout=subprocess.DEVNULL)
        wait_port(fport)
        wait_port(sport)
        # The shop opens its database before any request: its SQL spans are named from that DB_CONNECT
        # row once it has arrived, before that from the evidence its rows leave (binds: SQLite).
        for i in range(ORDERS):
            self.assertEqual(get(fport, f"/order/{i}"), 200)
        statuses = [get(sport, path, method) for method, path in SHOP_REQUESTS]
        # A command-line SQL tool in process mode: one INTERNAL span, its connection inside it.
        cli_db = os.path.join(self.tmp, "cli.db")
        subprocess.run([SQLITE3, cli_db, "CREATE TABLE t(a); INSERT INTO t VALUES (1), (2); SELECT a FROM t;"],
                       env=agent_env(col.endpoint, app="cli", mode="process"), check=True, capture_output=True)
        self.assertIn(500, statuses)  # /fail: a failed statement
        wait_transactions(col.db, 2 * ORDERS + len(SHOP_REQUESTS) + 1)
        for p in (front, back, shop):
            p.terminate()
            p.wait(timeout=10)
        return bport, {"shop": shop_db, "cli": cli_db}

    def check_spans(self, txs, spans, bport, dbs, export=False):
        by_id = {}
        for s in spans:
            self.assertNotIn(s["span_id"], by_id, f"span id {s['span_id']} twice")
            by_id[s["span_id"]] = s
        children = {}
        for s in spans:
            children.setdefault(s["parent_span_id"], []).append(s)
        expected_spans = 0
        for t in txs:
            root = by_id.get(t["txid"])
            self.assertIsNotNone(root, f"transaction {t['txid']} {t['name']} ({t['app']}) arrived as no span")
            expected_spans += 1
            a = root["attributes"]
            self.assertEqual(root["trace_id"], t["trace_id"])
            self.assertEqual(root["parent_span_id"], "" if t["parent_span_id"] == "0000000000000000"
                             else t["parent_span_id"])
            process = t["kind"] == "process"
            self.assertEqual(root["kind"], SPAN_KIND["INTERNAL" if process else "SERVER"])
            self.assertEqual(root["name"], t["name"])
            self.assertEqual(int(root["start"]), t["start_unix_ns"])
            self.assertEqual(int(root["end"]), t["start_unix_ns"] + t["elapsed_ns"])
            self.assertEqual(a["txray.elapsed_ns"], t["elapsed_ns"])
            self.assertEqual(a["txray.cpu_ns"], t["cpu_ns"])
            self.assertEqual(a["txray.sql_ns"], t["sql_ns"])
            self.assertEqual(a["txray.call_ns"], t["call_ns"])
            if process:
                self.assertEqual(a["process.exit.code"], t["status"])
                self.assertNotIn("http.request.method", a)
            else:
                self.assertEqual(a["http.request.method"], t["name"].split(" ")[0])
                self.assertEqual(a["url.path"], t["name"].split(" ", 1)[1])
                self.assertEqual(a["http.response.status_code"], t["status"])
            self.assertEqual(root["status"]["code"] == STATUS_ERROR, bool(t["error"]) or t["status"] >= 500, t["name"])
            r = root["resource"]
            self.assertEqual(r["service.name"], t["app"])
            self.assertEqual(r["host.name"], t["host"])
            self.assertEqual(r["process.pid"], t["pid"])
            self.assertEqual(r["process.executable.name"], t["program"])
            self.assertEqual(r["telemetry.sdk.name"], "txray")
            self.assertEqual(root["scope"], "txray")
            # Rows: call rows are spans of this trace (nested as the rows nest), the others events; each
            # carries its row number, GAP and CPU_T exactly as stored.
            mine = {}
            stack = [root]
            while stack:
                s = stack.pop()
                mine[s["span_id"]] = s
                # a callee's SERVER span hangs under a CLIENT span of this one: another transaction
                stack.extend(c for c in children.get(s["span_id"], []) if "txray.row" in c["attributes"])
            spans_by_row = {s["attributes"]["txray.row"]: s for s in mine.values() if s is not root}
            events_by_row = {e["attributes"]["txray.row"]: (s, e) for s in mine.values() for e in s["events"]
                             if "txray.row" in e["attributes"]}
            for st in t["steps"]:
                no = st["no"]
                if st["kind"] in SPAN_STEPS:
                    expected_spans += 1
                    sp = spans_by_row.get(no)
                    self.assertIsNotNone(sp, f"{t['name']}: row {no} {st['kind']} is no span")
                    attrs = sp["attributes"]
                    self.assertEqual(sp["trace_id"], t["trace_id"])
                    self.assertEqual(int(sp["start"]), t["start_unix_ns"] + st["start_offset_ns"])
                    self.assertEqual(int(sp["end"]) - int(sp["start"]), st["elapsed_ns"])
                    parent = st["parent"]
                    want_parent = spans_by_row[parent]["span_id"] if parent in spans_by_row else t["txid"]
                    self.assertEqual(sp["parent_span_id"], want_parent, f"{t['name']} row {no}")
                else:
                    self.assertIn(no, events_by_row, f"{t['name']}: row {no} {st['kind']} is no event")
                    _, ev = events_by_row[no]
                    self.assertEqual(ev["name"], st["kind"])
                    self.assertEqual(int(ev["time"]), t["start_unix_ns"] + st["start_offset_ns"])
                    attrs = ev["attributes"]
                self.assertEqual(attrs["txray.gap_ns"], st["gap_ns"], f"{t['name']} row {no} GAP")
                self.assertEqual(attrs["txray.cpu_ns"], st["cpu_ns"], f"{t['name']} row {no} CPU_T")
                if st["kind"] == "HTTP_CALL":
                    self.assertEqual(sp["span_id"], st["span_id"], "the call's span id is the one it sent")
                    self.assertEqual(sp["kind"], SPAN_KIND["CLIENT"])
                    self.assertEqual(attrs["http.request.method"], "GET")
                    self.assertEqual(attrs["url.full"], st["url"])
                    self.assertEqual(attrs["server.address"], "127.0.0.1")
                    self.assertEqual(attrs["server.port"], bport)
                    self.assertEqual(attrs["http.response.status_code"], st["status"])
                    self.assertEqual(attrs["txray.bytes_read"], st["bytes_read"])
                    callee = by_id.get(st["callee_txid"])
                    self.assertIsNotNone(callee, "the callee's span")
                    self.assertEqual(callee["parent_span_id"], sp["span_id"], "callee SERVER span under the CLIENT span")
                    self.assertEqual(callee["trace_id"], sp["trace_id"])
                    self.assertEqual(callee["resource"]["service.name"], "back")
                elif st["kind"] == "SQL":
                    self.assertEqual(sp["kind"], SPAN_KIND["CLIENT"])
                    self.assertEqual(attrs["db.system.name"], "sqlite")
                    self.assertEqual(attrs["db.query.text"], st["text"])  # masked, as stored
                    self.assertEqual(attrs["db.operation.name"], st["text"].split()[0].upper())
                    # The file is known from the process's DB_CONNECT row, which rides in its container of
                    # unattributed steps (the connect ran before any request): live, the first rows may be
                    # exported before it arrives; `txray export` reads it from the store first.
                    # (The CLI connects inside its transaction: known at once.)
                    if export or process or "db.namespace" in attrs:
                        self.assertEqual(attrs["db.namespace"], dbs[t["app"]])
                    self.assertEqual(attrs["txray.rows"], st.get("rows", -1))
                    self.assertEqual(attrs["txray.fingerprint"], st["fingerprint"])
                    self.assertEqual(sp["status"]["code"] == STATUS_ERROR, bool(st["error"]))
                    if st["error"]:
                        self.assertEqual(sp["status"]["message"], st["error"])
        self.assertEqual(len(spans), expected_spans, "spans that are neither a transaction nor a call row")

    def test_forward_and_export(self):
        rec = Receiver(self, self.tmp, "live")
        col = Collector(self.tmp, extra_args=["--otlp-endpoint", rec.endpoint])
        with col:
            bport, dbs = self.drive(col)
        log = col.log_text()
        txs = show_json(col.db, "--last", "100000")
        apps = {t["app"] for t in txs}
        self.assertEqual(apps, {"front", "back", "shop", "cli"})
        self.assertEqual(sum(t["app"] == "front" for t in txs), ORDERS)
        self.assertEqual(sum(t["app"] == "shop" for t in txs), len(SHOP_REQUESTS))
        st = otlp_status(log)
        self.assertIsNotNone(st, log)
        self.assertEqual(st["sent_tx"], len(txs), st["line"])
        self.assertEqual((st["dropped"], st["failed"], st["queued"]), (0, 0, 0), st["line"])
        spans = rec.spans()
        self.assertEqual(st["sent_spans"], len(spans), st["line"])
        stats = rec.stats()
        self.assertEqual(stats["bad"], 0)
        self.assertEqual(stats["gzip"], stats["accepted"], "every request gzip-encoded")
        self.check_spans(txs, spans, bport, dbs)
        sql_spans = [s for s in spans if "db.query.text" in s["attributes"]]
        self.assertGreaterEqual(len(sql_spans), len(SHOP_REQUESTS) + 3)
        connects = [s for s in spans if s["name"] == "connect sqlite" and s["resource"]["service.name"] == "cli"]
        self.assertTrue(connects and connects[0]["attributes"]["db.namespace"] == dbs["cli"], connects)
        self.assertTrue(any(s["status"]["code"] == STATUS_ERROR for s in sql_spans), "the failed statement")

        print(f"\nforwarded: {len(txs)} transactions -> {len(spans)} spans "
              f"({sum(len(x['events']) for x in spans)} events, {len(sql_spans)} SQL) in {stats['accepted']} requests")
        # txray export of a stored range: the shop's transactions, the same spans (ids, attributes).
        rec2 = Receiver(self, self.tmp, "export")
        shop = [t for t in txs if t["app"] == "shop"]
        since = min(t["end_unix_ns"] for t in shop) / 1e9 - 0.001
        until = max(t["end_unix_ns"] for t in shop) / 1e9 + 0.001
        r = subprocess.run([TXRAY, "export", "--db", col.db, "--otlp-endpoint", rec2.endpoint, "--app", "shop",
                            "--since", f"{since:.6f}", "--until", f"{until:.6f}"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{len(shop)} transactions selected, {len(shop)} sent", r.stderr)
        exported = rec2.spans()
        self.check_spans(shop, exported, bport, dbs, export=True)
        live = {s["span_id"]: s for s in spans}
        for s in exported:
            self.assertIn(s["span_id"], live, "an exported span the live stream did not have")
            self.assertEqual(s["attributes"], live[s["span_id"]]["attributes"])
            self.assertEqual(s["parent_span_id"], live[s["span_id"]]["parent_span_id"])
        # An empty range sends nothing and succeeds.
        r = subprocess.run([TXRAY, "export", "--db", col.db, "--otlp-endpoint", rec2.endpoint, "--until", "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 transactions selected", r.stderr)
        rec.stop()
        rec2.stop()

    def test_backend_away(self):
        """No back-end at all: storing goes on, the status line says so, the collector exits within its
        bound (5 s for the export) and counts what it could not deliver; `txray export` gives up after
        --give-up-after and exits 1; a bad endpoint is refused."""
        port = free_port()  # nothing listens there
        col = Collector(self.tmp, extra_args=["--otlp-endpoint", f"http://127.0.0.1:{port}"])
        with col:
            send_batches(col.endpoint, "--transactions", 200, "--per-batch", 50, "--steps", 4)
            wait_transactions(col.db, 200)
            wait_for(lambda: "REFUSED for" in col.log_text(), timeout=20, what="the status line saying REFUSED")
            t0 = time.monotonic()
        self.assertLess(time.monotonic() - t0, 15, "the collector's exit waited for the absent back-end")
        st = otlp_status(col.log_text())
        self.assertEqual((st["sent_tx"], st["dropped"], st["queued"]), (0, 200, 0), st["line"])
        self.assertIn("no answer", col.log_text())
        r = subprocess.run([TXRAY, "export", "--db", col.db, "--otlp-endpoint", f"http://127.0.0.1:{port}",
                            "--give-up-after", "2"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("200 transactions selected, 0 sent", r.stderr)
        r = subprocess.run([TXRAY, "collect", "--db", os.path.join(self.tmp, "x.db"), "--otlp-endpoint",
                            "tcp://127.0.0.1:4318"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("http://", r.stderr)


if __name__ == "__main__":
    unittest.main()
