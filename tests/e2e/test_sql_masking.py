"""With the default TXRAY_SQL=mask, no literal value of a statement (nor a bound parameter) reaches the
collector's database: a corpus full of literals is run through the sqlite3 shell, psql and Python's
sqlite3 under the agent, and the whole store (every table, and the raw database and WAL files) is searched
for each value. The same run with TXRAY_SQL=raw shows the values, so the search can find them."""
import glob
import os
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pgserver import PSQL, PgServer  # noqa: E402
from txraytest import PYTHON, Collector, TxrayTestCase, agent_env, show_json, wait_transactions  # noqa: E402

SQLITE_CORPUS = r"""
CREATE TABLE c(id INTEGER PRIMARY KEY, s TEXT, n REAL, b BLOB);
INSERT INTO c VALUES (918273645, 'zqxv''quoted''one', -7364518.25e3, X'DEADBEEF0123');
INSERT INTO c VALUES (918273646, 'zqxv two -- not a comment', 5.5e-7, x'ABCDEF987654'), (918273647, 'zqxv three /* nor this */', 0x7A3B9C1D, NULL);
SELECT * FROM c WHERE id IN (918273645, 918273646, 918273647, 555444333);
SELECT s FROM c WHERE s = 'zqxv unicode ünï€ode' /* zqxv comment */; -- zqxv line comment
UPDATE c SET n = -0.000123987 WHERE s LIKE 'zqxv%pattern%';
SELECT 'zqxv' || 'concat', 271828182 + 314159265;
DELETE FROM c WHERE id = 918273647 AND n <> 6.02214076e23;
"""

PG_CORPUS = r"""
CREATE TEMP TABLE p(id bigint PRIMARY KEY, s text, n numeric, b bytea, bits bit varying, arr int[]);
INSERT INTO p VALUES (918273645, 'zqxv''quoted''one', -7364518.25e3, '\xDEADBEEF0123', B'1011001110001', ARRAY[555444333, 555444334]);
INSERT INTO p VALUES (918273646, E'zqxv\'escaped\\two', 5.5e-7, decode('ABCDEF987654', 'hex'), X'7A3B9C1D', '{1,2}'), (918273647, $$zqxv dollar 'quoted'$$, 1e10, NULL, NULL, NULL);
INSERT INTO p VALUES (918273648, $body$zqxv tagged $$ inner$body$, 42.125, NULL, NULL, NULL);
SELECT * FROM p WHERE id IN (918273645, 918273646, 555444335) /* zqxv comment */; -- zqxv line comment
SELECT s FROM p WHERE s = U&'zqxv\00fcnicode' OR s = N'zqxv national' OR s = 'zqxv ünï€ode';
UPDATE p SET n = -0.000123987 WHERE s LIKE 'zqxv%' AND id = ANY(ARRAY[918273645, 918273646]);
SELECT 'zqxv' || 'concat', 271828182 + 314159265;
DELETE FROM p WHERE id = 918273648 AND n <> 6.02214076e23;
"""

PY_BINDS = r"""
import sqlite3
con = sqlite3.connect(":memory:")
con.execute("CREATE TABLE t(a TEXT, b INTEGER, c REAL, d BLOB)")
con.execute("INSERT INTO t VALUES (?, ?, ?, ?)", ("zqxv bound text", 918273649, 3.14159e-9, b"zqxv blob"))
con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [("zqxv many %d" % i, 918273650 + i, 0.5, None) for i in range(3)])
print(con.execute("SELECT count(*) FROM t WHERE a LIKE :pattern", {"pattern": "zqxv%"}).fetchone()[0])
"""

# Values that occur only as literals above (and in no identifier, keyword or output the agent records).
SECRETS = ["zqxv", "918273645", "918273646", "918273647", "918273648", "918273649", "918273650", "7364518",
           "DEADBEEF", "ABCDEF987654", "7A3B9C1D", "1011001110001", "555444333", "555444334", "555444335",
           "000123987", "271828182", "314159265", "6.02214076", "3.14159", "ünï€ode"]


def store_text(db):
    """Everything the store holds, as one string: every value of every table, plus the raw files."""
    parts = []
    con = sqlite3.connect(db)
    try:
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in con.execute(f'SELECT * FROM "{table}"'):
                parts.extend(str(v) for v in row)
    finally:
        con.close()
    for path in glob.glob(db + "*"):
        with open(path, "rb") as f:
            parts.append(f.read().decode("utf-8", "replace"))
    return "\n".join(parts)


class Masking(TxrayTestCase):
    pg = None

    @classmethod
    def setUpClass(cls):
        cls.pg = PgServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def run_corpus(self, mode):
        """Runs the three clients under the agent with TXRAY_SQL=mode; returns the store's text."""
        workdir = os.path.join(self.tmp, mode)
        os.makedirs(workdir)
        with open(os.path.join(workdir, "corpus.sql"), "w") as f:
            f.write(PG_CORPUS)
        # From a file: the agent records a process's command line, and the values must not be in it.
        with open(os.path.join(workdir, "binds.py"), "w") as f:
            f.write(PY_BINDS)
        with Collector(workdir) as col:
            env = agent_env(col.endpoint, mode="process", extra={"TXRAY_SQL": mode})
            r = subprocess.run(["/usr/bin/sqlite3", os.path.join(workdir, "c.db")], input=SQLITE_CORPUS, env=env,
                               capture_output=True, text=True, errors="replace", timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([PSQL, "-X", *self.pg.conn_args(), "-v", "ON_ERROR_STOP=1", "-f",
                                os.path.join(workdir, "corpus.sql")], env=self.pg.client_env(env),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([PYTHON, os.path.join(workdir, "binds.py")], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual((r.returncode, r.stdout), (0, "4\n"), r.stderr)
            wait_transactions(col.db, 3)
        self.db = col.db
        return store_text(col.db)

    def test_default_mask_leaves_no_literal_in_the_store(self):
        text = self.run_corpus("mask")
        self.assertIn("INSERT INTO c VALUES (?, ?, ?, ?)", text)  # the statements are there, masked
        self.assertIn("SELECT * FROM p WHERE id IN (?+)", text)
        leaked = [s for s in SECRETS if s in text]
        self.assertEqual(leaked, [], "literal values found in the collector's database")

    def test_raw_mode_keeps_values(self):
        text = self.run_corpus("raw")
        for s in ("zqxv''quoted''one", "918273645", "DEADBEEF", "$$zqxv dollar", "zqxv bound text", "918273649"):
            self.assertIn(s, text)

    def test_off_mode_keeps_fingerprints_only(self):
        text = self.run_corpus("off")
        self.assertNotIn("INSERT INTO", text)
        self.assertEqual([v for v in SECRETS if v in text], [])
        sql = [s for tx in show_json(self.db, "--last", "10") for s in tx["steps"] if s["kind"] == "SQL"]
        self.assertGreaterEqual(len(sql), 8 + 9 + 4)  # every statement of the three clients is a row
        for s in sql:
            self.assertEqual(s["text"], "")
            self.assertRegex(s["fingerprint"], "^[0-9a-f]{16}$")
            self.assertNotIn("binds", s.get("attributes") or {})


if __name__ == "__main__":
    unittest.main()
