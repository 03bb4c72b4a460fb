"""`txray report` from the command line: every format over a store with known content, the numbers
checked against the store itself, the filters and time arguments, and clear errors on bad input."""
import csv
import json
import math
import os
import sqlite3
import subprocess
import unittest

import report_store
from report_store import BASE, MS
from txraytest import TXRAY, TxrayTestCase


def report(*args, check=True):
    p = subprocess.run([TXRAY, "report", *args], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"txray report {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def read(path):
    with open(path) as f:
        return f.read()


def nearest_rank(values, q):
    s = sorted(values)
    return s[max(1, math.ceil(q / 100 * len(s) - 1e-9)) - 1]


class ReportCli(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.db = os.path.join(self.tmp, "store.db")
        self.elapsed = report_store.build(self.db)

    def test_json_numbers_match_the_store(self):
        j = json.loads(report("--db", self.db, "--format", "json").stdout)
        s = j["summary"]
        self.assertEqual(s["transactions"], 41)
        self.assertEqual(s["errors"], 4)
        for q in (50, 90, 95, 99):
            self.assertEqual(s[f"p{q}_ms"], nearest_rank(self.elapsed, q), f"p{q}")
        self.assertEqual(s["max_ms"], 500)
        # Counted straight from the store, independently of the report.
        con = sqlite3.connect(self.db)
        (n_sql, sum_sql) = con.execute("SELECT count(*), sum(elapsed_ns) FROM steps WHERE kind = 'SQL'").fetchone()
        con.close()
        self.assertEqual(sum(g["calls"] for g in j["sql"]), n_sql)
        self.assertAlmostEqual(sum(g["total_ms"] for g in j["sql"]), sum_sql / MS)
        self.assertEqual(j["sql"][0]["fingerprint"], "0000000000000222")
        self.assertEqual(j["repeated"][0]["executions"], 12)
        self.assertEqual(j["repeated"][0]["worst"][0]["name"], report_store.EVIL_NAME)
        self.assertEqual(sum(b["count"] for b in j["histogram"]), 41)
        self.assertEqual(j["slowest"][0]["dominant"], "SQL")

    def test_every_format_and_csv_tables(self):
        md = report("--db", self.db).stdout
        self.assertIn("## Summary", md)
        self.assertIn("| 41 |", md)
        out_dir = os.path.join(self.tmp, "csv")
        report("--db", self.db, "--format", "csv", "-o", out_dir)
        self.assertEqual(sorted(os.listdir(out_dir)),
                         sorted(f"{t}.csv" for t in
                                ["summary", "slowest", "names", "sql", "calls", "cache", "repeated",
                                 "histogram"]))
        with open(os.path.join(out_dir, "names.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({r["name"] for r in rows}, {"GET /orders/{id}", report_store.EVIL_NAME})
        one = report("--db", self.db, "--format", "csv", "--table", "summary").stdout
        summary = dict(csv.reader(one.splitlines()[1:]))
        self.assertEqual(summary["transactions"], "41")
        out = os.path.join(self.tmp, "r.html")
        report("--db", self.db, "--format", "html", "-o", out)
        self.assertTrue(read(out).startswith("<!DOCTYPE html>"))
        self.assertFalse(os.path.exists(out + ".tmp"))

    def test_cache_commands_by_pattern(self):
        j = json.loads(report("--db", self.db, "--format", "json").stdout)
        got = [(g["system"], g["example"], g["calls"], g["summarized"], g["misses"], g["errors"], g["transactions"],
                g["total_ms"]) for g in j["cache"]]
        self.assertEqual(got, [("redis", "GET item:?", 140, 100, 10, 0, 41, 90.0),
                               ("memcached", "get sess:?", 5, 0, 1, 1, 5, 10.0),
                               ("redis", report_store.EVIL_CACHE, 1, 0, 1, 0, 1, 3.0)])
        self.assertEqual(j["cache"][0]["key"], "redis:0000000000000333")
        self.assertEqual(j["groups"]["cache"], 3)
        self.assertEqual(j["cache"][0]["p95_ms"], 1.0)  # over the 40 recorded steps, not the folded ones
        # Past the threshold inside one transaction, a cache pattern is an N+1 as SQL is.
        rep = {(p["kind"], p["example"]): p["executions"] for p in j["repeated"]}
        self.assertEqual(rep[("REDIS", "GET item:?")], 100)
        self.assertEqual(rep[("SQL", report_store.EVIL_SQL)], 12)
        md = report("--db", self.db).stdout
        self.assertIn("## Cache commands by pattern", md)
        self.assertIn("| 1 | redis | `GET item:?` | 140 (100 folded) | 10 |", md)
        csv_text = report("--db", self.db, "--format", "csv", "--table", "cache").stdout
        rows = list(csv.DictReader(csv_text.splitlines()))
        self.assertEqual([(r["system"], r["example"], r["misses"]) for r in rows],
                         [("redis", "GET item:?", "10"), ("memcached", "get sess:?", "1"),
                          ("redis", report_store.EVIL_CACHE, "1")])

    def test_filters_and_time_arguments(self):
        def count(*args):
            return json.loads(report("--db", self.db, "--format", "json", *args).stdout)["summary"]["transactions"]
        self.assertEqual(count("--min-ms", "30"), 12)  # 30..40 and the 500 ms one
        self.assertEqual(count("--name", "orders"), 40)
        self.assertEqual(count("--app", "nope"), 0)
        # end times: transaction i (1..40) ends at 10:00:00 + i*101 ms; the 500 ms one at 10:00:10.5
        self.assertEqual(count("--until", "2025-11-29T10:00:01Z"), 9)
        self.assertEqual(count("--since", str((BASE + 2_000 * MS) // 10**9)), 41 - 19)
        self.assertEqual(count("--since", "2025-11-29T12:00:04+02:00"), 2)  # 10:00:04: i = 40 and the 500 ms one
        self.assertEqual(count("--since", "-1h"), 0)  # the store is from 2025

    def test_errors_are_clear(self):
        p = report("--db", os.path.join(self.tmp, "missing.db"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot open store", p.stderr)
        self.assertEqual(p.stdout, "")
        not_store = os.path.join(self.tmp, "x.db")
        sqlite3.connect(not_store).execute("CREATE TABLE t(a)").connection.close()
        p = report("--db", not_store, check=False)
        self.assertIn("not a txray store", p.stderr)
        p = report("--db", self.db, "--since", "yesterday", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad time 'yesterday'", p.stderr)
        p = report("--db", self.db, "--format", "pdf", check=False)
        self.assertNotEqual(p.returncode, 0)
        p = report("--db", self.db, "--format", "csv", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("-o DIR", p.stderr)
        p = report("--db", self.db, "--table", "sql", check=False)
        self.assertEqual(p.returncode, 2)
        p = report(check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--db", p.stderr)
        out = os.path.join(self.tmp, "keep.md")
        with open(out, "w") as f:
            f.write("old")
        report("--db", os.path.join(self.tmp, "missing.db"), "-o", out, check=False)
        self.assertEqual(read(out), "old")  # a failed report leaves the old file alone


if __name__ == "__main__":
    unittest.main()
