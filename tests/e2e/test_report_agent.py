"""The report over real traced traffic: the sqlite3 shell under the agent (process mode) runs an N+1
loop; `txray report` must find it, and its numbers must match what `txray show --json` stores."""
import json
import math
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from txraytest import TXRAY, Collector, TxrayTestCase, agent_env, show_json, wait_transactions  # noqa: E402

SQLITE3 = "/usr/bin/sqlite3"
LOOKUP = "SELECT name FROM users WHERE id = ?;"  # as the agent masks it
SCRIPT = ("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT);\n"
          "INSERT INTO users VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,'e'),(6,'f'),(7,'g');\n"
          + "".join(f"SELECT name FROM users WHERE id = {i};\n" for i in range(1, 8)))


def nearest_rank(values, q):
    s = sorted(values)
    return s[max(1, math.ceil(q / 100 * len(s) - 1e-9)) - 1]


class ReportOverTracedSqlite(TxrayTestCase):
    def setUp(self):
        super().setUp()
        with Collector(self.tmp) as col:
            for k in range(3):
                p = subprocess.run([SQLITE3, os.path.join(self.tmp, f"app{k}.db")], input=SCRIPT,
                                   env=agent_env(col.endpoint, app="n1", mode="process"),
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
            wait_transactions(col.db, 3)
        self.db = col.db
        self.txs = show_json(self.db, "--last", "10")
        self.assertEqual(len(self.txs), 3)

    def report(self, *args):
        return json.loads(subprocess.run([TXRAY, "report", "--db", self.db, "--format", "json", *args],
                                         check=True, capture_output=True, text=True).stdout)

    def test_finds_the_n_plus_one_loop(self):
        j = self.report()
        [rep] = j["repeated"]
        self.assertEqual((rep["kind"], rep["example"]), ("SQL", LOOKUP))
        self.assertEqual((rep["transactions"], rep["executions"], rep["max_per_tx"]), (3, 21, 7))
        self.assertEqual(sorted(w["txid"] for w in rep["worst"]), sorted(t["txid"] for t in self.txs))
        self.assertEqual(self.report("--repeat", "8")["repeated"], [])

    def test_numbers_match_the_stored_profiles(self):
        j = self.report()
        s = j["summary"]
        elapsed_ms = [t["elapsed_ns"] / 1e6 for t in self.txs]
        self.assertEqual(s["transactions"], 3)
        self.assertEqual(s["errors"], 0)
        for q in (50, 90, 95, 99):
            self.assertAlmostEqual(s[f"p{q}_ms"], nearest_rank(elapsed_ms, q), places=6)
        self.assertAlmostEqual(s["time_ms"]["total"], sum(elapsed_ms), places=6)
        self.assertAlmostEqual(s["cpu_ms"], sum(t["cpu_ns"] for t in self.txs) / 1e6, places=6)
        # Per fingerprint: calls, time and rows are the sums over the stored SQL steps.
        steps = [st for t in self.txs for st in t["steps"] if st["kind"] == "SQL"]
        by_fp = {}
        for st in steps:
            g = by_fp.setdefault(st["fingerprint"], [0, 0, 0])
            g[0] += 1
            g[1] += st["elapsed_ns"]
            g[2] += max(st.get("rows") or 0, 0)
        self.assertEqual({g["fingerprint"] for g in j["sql"]}, set(by_fp))
        for g in j["sql"]:
            calls, ns, rows = by_fp[g["fingerprint"]]
            self.assertEqual(g["calls"], calls, g["example"])
            self.assertAlmostEqual(g["total_ms"], ns / 1e6, places=6)
            self.assertEqual(g["rows"], rows, g["example"])
        lookup = next(g for g in j["sql"] if g["example"] == LOOKUP)
        self.assertEqual((lookup["calls"], lookup["rows"], lookup["transactions"]), (21, 21, 3))


if __name__ == "__main__":
    unittest.main()
