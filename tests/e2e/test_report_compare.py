"""`txray report` with --baseline-*: a store with a known slowdown in one SQL fingerprint and a new
outbound call in the second window (compare_store.py). The JSON ranks the fingerprint first, lists the
new call and the new error, and its parts add up to the difference of the means; every format renders
the comparison (HTML escaped)."""
import csv
import json
import os
import sqlite3
import subprocess

import compare_store as cs
from txraytest import TXRAY, TxrayTestCase


def report(*args, check=True):
    p = subprocess.run([TXRAY, "report", *args], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"txray report {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


class ReportCompare(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.db = os.path.join(self.tmp, "store.db")
        cs.build(self.db)
        b0, b1, c0, c1 = cs.windows()
        self.args = ["--db", self.db, "--since", c0, "--until", c1, "--baseline-since", b0, "--baseline-until", b1]

    def test_json_ranks_the_slower_fingerprint_and_lists_the_new_call(self):
        j = json.loads(report(*self.args, "--format", "json").stdout)
        c = j["compare"]
        self.assertEqual(c["baseline"]["transactions"], cs.N_BASE)
        self.assertEqual(c["current"]["transactions"], cs.N_CUR)
        self.assertEqual(c["current"], j["summary"])
        # baseline: 1 + 3 + 6 = 10 ms; current: 1 + 9 + 2 + 6 = 18 ms
        self.assertAlmostEqual(c["baseline"]["avg_ms"], 10.0, places=6)
        self.assertAlmostEqual(c["difference_ms"], 8.0, places=6)
        parts = c["parts"]
        self.assertAlmostEqual(sum(p["contribution_ms"] for p in parts), c["difference_ms"], places=6)
        for p in parts:
            self.assertIn(p["part"], ("cpu", "sql", "fetch", "call", "waiting"))
            self.assertIn("key", p)
        top = parts[0]
        self.assertEqual((top["part"], top["key"], top["fingerprint"]), ("sql", cs.SLOW_SQL, f"{cs.SLOW_FP:016x}"))
        self.assertAlmostEqual(top["contribution_ms"], 6.0, places=6)
        self.assertAlmostEqual(top["time_effect_ms"], 6.0, places=6)
        self.assertAlmostEqual(top["baseline_ms_per_call"], 3.0, places=6)
        self.assertAlmostEqual(top["current_ms_per_call"], 9.0, places=6)
        # examples: one transaction of each side, shown side by side in the viewer
        self.assertLess(top["examples"]["baseline"]["id"], 1000)
        self.assertGreaterEqual(top["examples"]["current"]["id"], 1000)
        self.assertEqual((parts[1]["part"], parts[1]["key"]), ("call", "pricing.internal:8080/quote"))
        self.assertAlmostEqual(parts[1]["contribution_ms"], 2.0, places=6)
        self.assertEqual([x["key"] for x in c["appeared"]["calls"]], ["pricing.internal:8080/quote"])
        self.assertEqual(c["appeared"]["calls"][0]["calls"], cs.N_CUR)
        self.assertEqual([x["key"] for x in c["appeared"]["errors"]], ["pricing <timeout>"])
        self.assertEqual(c["appeared"]["sql"], [])
        self.assertEqual(c["vanished"], {"sql": [], "calls": [], "errors": []})
        by_part = {p["part"]: p for p in c["by_part"]}
        self.assertAlmostEqual(by_part["sql"]["contribution_ms"], 6.0, places=6)
        self.assertAlmostEqual(by_part["cpu"]["contribution_ms"], 0.0, places=6)
        self.assertAlmostEqual(sum(p["contribution_ms"] for p in c["by_part"]), c["difference_ms"], places=6)
        self.assertFalse(c["cpu_samples"])

    def test_cpu_in_own_code_split_by_hot_function(self):
        """With CPU samples (cpu_hot, cpu_rows: docs/agent.md "CPU samples"), CPU in own code is split by
        function: both windows spend 4 ms of CPU per request in their END row; the baseline's samples are
        all in parse_json, the current window's are one quarter parse_json and three quarters
        inflate_fast, with a few samples past the listed functions. The split moves 3 ms from parse_json
        to inflate_fast and stays exact."""
        db = sqlite3.connect(self.db)
        end_no = 3  # START, SQL, SQL, END in the baseline; the current window has its HTTP_CALL before END
        for (tid,) in db.execute("SELECT id FROM transactions").fetchall():
            no = end_no if tid < 1000 else end_no + 1
            hot = [("parse_json", "orders", 8)] if tid < 1000 else [("inflate_fast", "libz.so.1", 5),
                                                                   ("parse_json", "orders", 2)]
            rest = 0 if tid < 1000 else 1  # a sample of a function past the row's listed ones
            db.execute("INSERT INTO cpu_rows(tx_id, no, samples) VALUES (?, ?, ?)",
                       (tid, no, sum(h[2] for h in hot) + rest))
            for rank, (fn, mod, n) in enumerate(hot):
                db.execute("INSERT INTO cpu_hot(tx_id, no, rank, function, module, samples) VALUES (?, ?, ?, ?, ?, ?)",
                           (tid, no, rank, fn, mod, n))
        db.commit()
        db.close()
        c = json.loads(report(*self.args, "--format", "json").stdout)["compare"]
        self.assertTrue(c["cpu_samples"])
        parts = c["parts"]
        self.assertAlmostEqual(sum(p["contribution_ms"] for p in parts), c["difference_ms"], places=6)
        cpu = {p["key"]: p["contribution_ms"] for p in parts if p["part"] == "cpu"}
        # current: 4 ms x 5/8 inflate_fast, 2/8 parse_json, 1/8 other; baseline: 4 ms parse_json
        self.assertAlmostEqual(cpu["inflate_fast (libz.so.1)"], 2.5, places=3)
        self.assertAlmostEqual(cpu["parse_json (orders)"], 1.0 - 4.0, places=3)
        self.assertAlmostEqual(cpu["(other functions)"], 0.5, places=3)
        self.assertNotIn("own code", cpu)
        self.assertAlmostEqual(sum(cpu.values()), 0.0, places=6)  # the same 4 ms of CPU on both sides
        md = report(*self.args, "--format", "md").stdout
        self.assertIn("inflate_fast (libz.so.1)", md)

    def test_baseline_filters_inherit_and_replace(self):
        # --baseline-app alone: the same time filters, so baseline == current and the difference is 0.
        b0, b1, c0, c1 = cs.windows()
        j = json.loads(report("--db", self.db, "--since", c0, "--until", c1, "--baseline-app", "shop",
                              "--format", "json").stdout)
        self.assertEqual(j["compare"]["baseline"]["transactions"], cs.N_CUR)
        self.assertAlmostEqual(j["compare"]["difference_ms"], 0.0, places=9)
        # a baseline that selects nothing: means of 0, still exact
        j = json.loads(report(*self.args[:-4], "--baseline-app", "nobody", "--format", "json").stdout)
        c = j["compare"]
        self.assertEqual(c["baseline"]["transactions"], 0)
        self.assertAlmostEqual(sum(p["contribution_ms"] for p in c["parts"]), c["difference_ms"], places=6)
        # no baseline: no compare object
        self.assertNotIn("compare", json.loads(report("--db", self.db, "--format", "json").stdout))
        p = report("--db", self.db, "--format", "csv", "--table", "compare", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("needs a baseline", p.stderr)
        p = report("--db", self.db, "--baseline-since", "yesterday-ish", check=False)
        self.assertEqual(p.returncode, 2)

    def test_markdown_html_csv(self):
        md = report(*self.args, "--format", "md").stdout
        self.assertIn("## Comparison with the baseline", md)
        self.assertIn("pricing.internal:8080/quote", md)
        self.assertIn("+6.00", md)
        self.assertNotIn("<b>", md)
        html = report(*self.args, "--format", "html").stdout
        self.assertIn("<h2>Comparison with the baseline</h2>", html)
        self.assertIn("&lt;b&gt;&amp;amp;&lt;/b&gt;", html)          # the SQL text, escaped
        self.assertIn("pricing &lt;timeout&gt;", html)                  # the new error, escaped
        self.assertNotIn("<script>document", html)
        self.assertNotIn("<b>&amp;", html)
        self.assertIn("<style>", html)  # the same self-contained page as the plain report
        out = os.path.join(self.tmp, "csv")
        report(*self.args, "--format", "csv", "-o", out)
        for t in ("compare_summary", "compare", "compare_changes", "compare_steps", "summary", "sql"):
            self.assertTrue(os.path.exists(os.path.join(out, t + ".csv")), t)
        with open(os.path.join(out, "compare.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual((rows[0]["part"], rows[0]["key"]), ("sql", cs.SLOW_SQL))
        self.assertAlmostEqual(sum(float(r["contribution_ms"]) for r in rows), 8.0, places=2)
        with open(os.path.join(out, "compare_changes.csv")) as f:
            changes = list(csv.DictReader(f))
        self.assertIn(("appeared", "call", "pricing.internal:8080/quote"),
                      [(r["change"], r["what"], r["key"]) for r in changes])
        # without a baseline, no compare tables are written
        plain = os.path.join(self.tmp, "plain")
        report("--db", self.db, "--format", "csv", "-o", plain)
        self.assertFalse(os.path.exists(os.path.join(plain, "compare.csv")))


if __name__ == "__main__":
    import unittest
    unittest.main()
