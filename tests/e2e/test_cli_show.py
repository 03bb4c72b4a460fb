"""`txray show` on a store filled by a real collector: the X-View text layout, selections, --trace over
linked calls, JSON fields, --unattributed, and clear errors (exit 2) for bad arguments and databases that are
not txray's."""
import json
import os
import re
import sqlite3
import subprocess
from collections import Counter

from txraytest import TXRAY, Collector, TxrayTestCase, send_batches, show_json, show_text, wait_transactions


def txray(*args):
    return subprocess.run([TXRAY, *args], capture_output=True, text=True, timeout=60)


class CliShow(TxrayTestCase):
    def fill(self, *args, n=40):
        with Collector(self.tmp) as c:
            sent = send_batches(c.endpoint, "--transactions", n, "--per-batch", 7, "--print-txids", *args)
            wait_transactions(c.db, n)
        return c.db, sent

    def test_profile_layout(self):
        db, sent = self.fill()
        out = show_text(db, "--last", "1")
        tx = show_json(db, "--last", "1")[0]
        self.assertIn(f"TXID           : {tx['txid']}", out)
        self.assertIn(f"GUID           : {tx['guid']}", out)
        for label in ("AGENT", "APPLICATION", "TRANSACTION", "CLIENT", "START TIME", "END TIME", "RESPONSE TIME",
                      "CPU TIME", "SQL TIME", "FETCH TIME", "CALL TIME", "STATUS", "BYTES"):
            self.assertRegex(out, rf"(?m)^{label} +: ", label)
        self.assertIn("[ NO ][ START_TIME ][", out)
        rows = re.findall(r"(?m)^\[(\d{4})\]\[(\d\d:\d\d:\d\d \d{3})\]\[ *([\d,.]+)\]\[ *([\d,.]+)\] (.*)$", out)
        self.assertEqual(len(rows), len(tx["steps"]))
        self.assertEqual(rows[0][4], "START")
        self.assertEqual(rows[-1][4], "END")
        messages = [r[4] for r in rows]
        self.assertTrue(any(m.startswith("SOCKET[addr=10.0.0.") and ",port=5432,localport=" in m for m in messages),
                        messages)
        self.assertTrue(any(re.match(r"SOCKET_CLOSE R=\d+,W=222,uid=[0-9a-f]{16}$", m) for m in messages), messages)
        self.assertTrue(any(re.match(r"  SQL SELECT .* rows=[\d,]+ \[[\d.,]+ ms\]", m) for m in messages), messages)
        self.assertTrue(any(m.startswith("HTTP_CALL GET http://backend:8080/stock/") and " status 200 [" in m
                            for m in messages), messages)
        # Whole milliseconds like the reference; three decimals for a transaction under 100 ms.
        if tx["elapsed_ns"] >= 100_000_000:
            total = f"TOTAL[{round(tx['elapsed_ns'] / 1e6):,}][{round(tx['cpu_ns'] / 1e6):,}]"
        else:
            total = f"TOTAL[{round(tx['elapsed_ns'] / 1e3) / 1e3:,.3f}][{round(tx['cpu_ns'] / 1e3) / 1e3:,.3f}]"
        self.assertIn(total, out)

    def test_selections(self):
        db, sent = self.fill()
        all_tx = show_json(db, "--last", "100")
        self.assertEqual(len(all_tx), 40)
        ends = [t["end_unix_ns"] for t in all_tx]
        self.assertEqual(ends, sorted(ends))  # most recent last
        slow = show_json(db, "--slowest", "5")
        self.assertEqual([t["elapsed_ns"] for t in slow],
                         sorted((t["elapsed_ns"] for t in all_tx), reverse=True)[:5])
        self.assertEqual(show_json(db, "--id", sent["txids"][3])[0]["txid"], sent["txids"][3])
        self.assertEqual(show_json(db, "--id", sent["txids"][3].upper())[0]["txid"], sent["txids"][3])
        self.assertEqual(len(show_json(db, "--last", "3", "--app", "synthetic")), 3)
        self.assertEqual(show_json(db, "--app", "elsewhere"), [])
        r = txray("show", "--db", db, "--id", "0123456789abcdef")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no matching transaction", r.stderr)

    def test_trace_tree_of_linked_calls(self):
        db, sent = self.fill("--linked", n=20)
        txs = show_json(db, "--last", "100")
        by_id = {t["txid"]: t for t in txs}
        linked = 0
        for t in txs:
            for s in t["steps"]:
                if s["kind"] == "HTTP_CALL" and "callee_txid" in s:
                    callee = by_id[s["callee_txid"]]
                    self.assertEqual(callee["parent_span_id"], s["span_id"])
                    self.assertEqual(callee["trace_id"], t["trace_id"])
                    linked += 1
        self.assertEqual(linked, 10)  # every pair linked, whichever arrived first
        caller = next(t for t in txs if any("callee_txid" in s for s in t["steps"]))
        tree = show_json(db, "--trace", caller["trace_id"])
        self.assertEqual([(t["depth"], t["txid"]) for t in tree],
                         [(0, caller["txid"]),
                          (1, next(s["callee_txid"] for s in caller["steps"] if "callee_txid" in s))])
        out = show_text(db, "--trace", caller["trace_id"].upper())
        self.assertIn(f"TRACE {caller['trace_id']}  (2 transactions)", out)
        self.assertIn("    \\_ " + tree[1]["txid"], out)
        self.assertIn("    TXID           : " + tree[1]["txid"], out)  # the callee's profile, indented
        self.assertIn(" callee=" + tree[1]["txid"], out)

    def test_unattributed_steps(self):
        # 5 transactions and one container of 13 unattributed steps, whose first call transaction 0 answered.
        db, sent = self.fill("--unattributed", 13, n=5)
        container = sent["container_txid"]
        # The container is no transaction: in no list, no trace, no report figure.
        for sel in (("--last", "100"), ("--slowest", "100")):
            txs = show_json(db, *sel)
            self.assertEqual(sorted(t["txid"] for t in txs), sorted(sent["txids"]), sel)
        self.assertEqual(show_json(db, "--id", container)[0]["kind"], "unattributed")  # --id still prints it

        steps = show_json(db, "--unattributed")
        self.assertEqual(len(steps), 13)
        self.assertEqual(Counter(s["kind"] for s in steps),
                         {"HTTP_CALL": 3, "SOCKET": 2, "SQL": 2, "DNS": 2, "SOCKET_CLOSE": 2, "DB_CONNECT": 2})
        for s in steps:
            for k in ("app", "agent", "pid", "container_tx_id", "kind", "text", "start_unix_ns", "elapsed_ms",
                      "status", "error", "callee_tx_id"):
                self.assertIn(k, s)
            self.assertEqual(s["app"], "synthetic")
            self.assertEqual(s["pid"], 4242)
            self.assertEqual(s["container_tx_id"], container)
        self.assertEqual([s["start_unix_ns"] for s in steps], sorted(s["start_unix_ns"] for s in steps))
        calls = [s for s in steps if s["kind"] == "HTTP_CALL"]
        self.assertEqual(calls[0]["callee_tx_id"], sent["txids"][0])  # linked as any call
        self.assertEqual([c["callee_tx_id"] for c in calls[1:]], [None, None])
        self.assertEqual(calls[0]["status"], 200)
        self.assertTrue(all(s["error"] == "connection refused" for s in steps if s["kind"] == "DB_CONNECT"))
        self.assertEqual(show_json(db, "--unattributed", "--app", "synthetic"), steps)

        out = show_text(db, "--unattributed")
        lines = out.splitlines()
        self.assertEqual(lines[0], "UNATTRIBUTED  app=synthetic  13 steps: HTTP_CALL 3, DB_CONNECT 2, DNS 2, SOCKET 2, "
                                   "SOCKET_CLOSE 2, SQL 2  (pid 4242, synthetic-service on testhost)")
        self.assertEqual(len(lines), 14, out)
        self.assertRegex(lines[1], r"^  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  HTTP_CALL GET http://backend:8080/b/\d+ "
                                   r"status 200 \[[\d.]+ ms\] callee=" + sent["txids"][0] + "$")

        report = json.loads(txray("report", "--db", db, "--format", "json").stdout)
        self.assertEqual(report["summary"]["transactions"], 5)
        self.assertEqual(report["summary"]["unattributed_steps"], 13)
        self.assertEqual(report["summary"]["unattributed_by_kind"]["HTTP_CALL"], 3)

        # None for another app: an empty result, exit 0.
        self.assertEqual(show_json(db, "--unattributed", "--app", "elsewhere"), [])
        r = txray("show", "--db", db, "--unattributed", "--app", "elsewhere")
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        self.assertIn("no unattributed steps", r.stderr)
        r = txray("show", "--db", db, "--unattributed", "--last", "2")
        self.assertEqual(r.returncode, 2)

    def test_json_fields(self):
        db, _ = self.fill(n=5)
        t = show_json(db, "--last", "1")[0]
        for k in ("txid", "guid", "app", "host", "pid", "name", "start_unix_ns", "elapsed_ns", "cpu_ns", "sql_ns",
                  "fetch_ns", "call_ns", "status", "error", "client_addr", "bytes_read", "bytes_written", "steps",
                  "trace_id", "span_id", "parent_span_id", "sql_count", "call_count", "attributes", "summary"):
            self.assertIn(k, t)
        self.assertRegex(t["txid"], r"^[0-9a-f]{16}$")
        for s in t["steps"]:
            for k in ("no", "parent", "kind", "start_offset_ns", "gap_ns", "cpu_ns", "elapsed_ns", "bytes_read",
                      "bytes_written", "text", "error"):
                self.assertIn(k, s)
            if s["kind"] == "HTTP_CALL":
                self.assertEqual(s["url"], s["text"])
                self.assertRegex(s["span_id"], r"^[0-9a-f]{16}$")
                self.assertEqual(s["status"], 200)

    def test_errors_exit_2(self):
        db, _ = self.fill(n=2)
        for sub in ("run", "collect", "show", "report"):
            r = txray(sub, "--help")
            self.assertEqual(r.returncode, 0, sub)
            self.assertIn("Usage", r.stdout, sub)
        cases = [
            ["show"],                                                     # no --db
            ["show", "--db", os.path.join(self.tmp, "missing.db")],
            ["show", "--db", db, "--id", "not-hex"],
            ["show", "--db", db, "--trace", "abc"],
            ["show", "--db", db, "--last", "0"],
            ["show", "--db", db, "--last", "2", "--slowest", "2"],
            ["show", "--db", db, "--bogus"],
        ]
        for args in cases:
            r = txray(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertTrue(r.stderr.strip(), args)
        text = os.path.join(self.tmp, "notes.txt")
        with open(text, "w") as f:
            f.write("hello, I am not a database" * 10)
        r = txray("show", "--db", text)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a txray store", r.stderr)
        foreign = os.path.join(self.tmp, "foreign.db")
        with sqlite3.connect(foreign) as con:
            con.execute("CREATE TABLE people(name TEXT)")
        r = txray("show", "--db", foreign)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a txray store", r.stderr)
        r = txray("nonsense")
        self.assertEqual(r.returncode, 2)
