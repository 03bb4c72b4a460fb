"""Compatibility matrix (issue 12), command-line programs: sqlite3, curl, git and make, each running a
deterministic workload bare and under the agent (LD_PRELOAD, TXRAY_MODE=process, a real collector).
Compared: every command's exit status, stdout and stderr byte for byte (curl: the `Date:` header and the
time a refused connection took normalized), and the files written (the built binary, the repository's
archive, the database's dump). Checked in the store: one process transaction per program run with its
exit status (git and make: per command, plus one per child program they run), sqlite3's statements as SQL
rows, curl's requests as HTTP_CALL rows."""
import os
import re
import shutil
import subprocess
import unittest

from compat import clean_env, count, matrix_case, print_table, process_name, record, run, sha, steps, traced_env, \
    transactions, wait_named
from txraytest import PYTHON, Collector, TxrayTestCase, free_port, wait_port

SQLITE3 = "/usr/bin/sqlite3"
CURL = "/usr/bin/curl"
GIT = "/usr/bin/git"
MAKE = "/usr/bin/make"


def tearDownModule():
    print_table("command-line programs")


SQL_SCRIPT = """\
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount REAL);
CREATE INDEX orders_customer ON orders(customer);
INSERT INTO orders(customer, amount) VALUES ('alice', 12.5), ('bob', 7.25), ('carol', 100);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000)
  INSERT INTO orders(customer, amount) SELECT 'c' || (x % 7), x * 0.25 FROM c;
SELECT customer, count(*), printf('%.2f', sum(amount)) FROM orders GROUP BY customer ORDER BY customer;
UPDATE orders SET amount = amount * 2 WHERE customer = 'alice';
SELECT changes(), total_changes();
DELETE FROM orders WHERE id % 10 = 0;
BEGIN;
INSERT INTO orders(customer, amount) VALUES ('dave', 1);
ROLLBACK;
SELECT count(*), printf('%.2f', total(amount)), max(id) FROM orders;
SELECT * FROM no_such_table;
.mode line
SELECT * FROM orders WHERE customer = 'carol';
.schema
PRAGMA integrity_check;
"""
# Statements whose rows must appear (by their start; the agent masks literals, docs/sql.md).
SQL_EXPECTED = ["CREATE TABLE orders", "CREATE INDEX orders_customer", "INSERT INTO orders", "WITH RECURSIVE",
                "SELECT customer, count(*)", "UPDATE orders SET", "DELETE FROM orders", "ROLLBACK",
                "PRAGMA integrity_check"]

MAKEFILE = """\
CC = cc
CFLAGS = -O1 -Wall
OBJS = main.o util.o

all: hello
hello: $(OBJS)
\t$(CC) -o $@ $(OBJS)
%.o: %.c util.h
\t$(CC) $(CFLAGS) -c $<
run: hello
\t./hello 3 > out.txt
\tcat out.txt
check: run
\ttest "$$(wc -l < out.txt)" = 3
\t@echo check passed
broken:
\t@echo about to fail
\tfalse
\t@echo never printed
clean:
\trm -f hello *.o out.txt
.PHONY: all run check broken clean
"""
MAIN_C = """\
#include <stdio.h>
#include <stdlib.h>
#include "util.h"
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1;
  for (int i = 0; i < n; i++) printf("line %d: %lu\\n", i, checksum(i));
  return 0;
}
"""
UTIL_C = """\
#include "util.h"
unsigned long checksum(int seed) {
  unsigned long h = 1469598103934665603UL;
  for (int i = 0; i <= seed * 1000; i++) h = (h ^ (unsigned long)i) * 1099511628211UL;
  return h;
}
"""
UTIL_H = "unsigned long checksum(int seed);\n"
MAKE_COMMANDS = [["all"], ["check"], ["-k", "broken"], ["-n", "clean"], ["clean"], ["-j2", "all"], ["no-such-target"]]


class Tools(TxrayTestCase):
    def compare_commands(self, program, commands, prepare, workdir, env_extra=None, files=()):
        """Runs `commands` (argument lists, run in workdir) bare, then under the agent, each time in a fresh
        workdir at the same path (so paths in the output are the same); compares every command's status,
        stdout and stderr and the sha of `files` after the run. Returns (results, collector)."""
        results = {}
        col = Collector(self.tmp).start()
        try:
            for side in ("bare", "agent"):
                shutil.rmtree(workdir, ignore_errors=True)
                os.makedirs(workdir)
                prepare(workdir)
                env = clean_env(env_extra)
                if side == "agent":
                    env = traced_env(col.endpoint, app=program, mode="process", extra=env_extra)
                out = []
                for cmd in commands:
                    if callable(cmd):
                        cmd(workdir)
                        continue
                    out.append((cmd, *run(cmd, env, cwd=workdir, timeout=120)))
                digests = {}
                for f in files:
                    p = os.path.join(workdir, f)
                    digests[f] = None
                    if os.path.exists(p):
                        with open(p, "rb") as fh:
                            digests[f] = sha(fh.read())
                results[side] = (out, digests)
            wait_named(col.db, program, {process_name(c) for c in commands if not callable(c)})
        finally:
            col.stop()
        bare, agent = results["bare"], results["agent"]
        for (cmd, bs, bo, be), (_, ts, to, te) in zip(bare[0], agent[0]):
            self.assertEqual((ts, to.decode(errors="replace"), te.decode(errors="replace")),
                             (bs, bo.decode(errors="replace"), be.decode(errors="replace")), f"{program}: {cmd}")
        self.assertEqual(agent[1], bare[1], f"{program}: files written")
        return bare[0], col

    def check_process_transactions(self, db, program, commands):
        """One process transaction per command, named after it, with its exit status."""
        txs = transactions(db, program)
        for cmd, status, _, _ in commands:
            name = process_name(cmd)
            mine = [t for t in txs if t[0] == name]
            self.assertEqual(len(mine), 1, f"{program}: the transaction of `{name}` in {[t[0] for t in txs][:20]}")
            self.assertEqual(mine[0][1], status, f"{program}: status of `{name}`")
            self.assertEqual(mine[0][2], "process")
        return txs

    @matrix_case('sqlite3')
    def test_sqlite3(self):
        work = os.path.join(self.tmp, "sqlite")
        cmds = [[SQLITE3, "-batch", "shop.db"],
                [SQLITE3, "-batch", "-readonly", "shop.db", "SELECT count(*) FROM orders"]]
        # the first command reads the script from stdin
        results = {}
        col = Collector(self.tmp).start()
        try:
            for side in ("bare", "agent"):
                shutil.rmtree(work, ignore_errors=True)
                os.makedirs(work)
                env = clean_env() if side == "bare" else traced_env(col.endpoint, app="sqlite3", mode="process")
                script = run(cmds[0], env, cwd=work, stdin=SQL_SCRIPT.encode())
                readonly = run(cmds[1], env, cwd=work)
                dump = run([SQLITE3, "shop.db", ".dump"], clean_env(), cwd=work)
                results[side] = (script, readonly, dump)
            wait_named(col.db, "sqlite3", {process_name(c) for c in cmds})
        finally:
            col.stop()
        self.assertEqual(results["agent"], results["bare"])
        script = results["bare"][0]
        self.assertEqual(script[0], 1, script)  # the error on no_such_table makes the exit status 1
        self.assertIn(b"no such table: no_such_table", script[2])
        self.assertIn(b"alice|1|12.50", script[1])
        txs = transactions(col.db, "sqlite3")
        self.assertEqual(sorted(t[1] for t in txs), [0, 1], txs)
        sql = steps(col.db, "sqlite3", "SQL")
        for stmt in SQL_EXPECTED:
            self.assertTrue(any(s.startswith(stmt) for s in sql), f"no SQL row starting with {stmt!r}: {sql}")
        record("sqlite3", f"{len(SQL_SCRIPT.splitlines())}-line script (DDL, 2,000-row insert, error), read-only query",
               f"{script[0]}, {results['bare'][1][0]}", f"{results['agent'][0][0]}, {results['agent'][1][0]}",
               True, len(txs), f"{len(sql)} SQL rows")

    @matrix_case('curl')
    def test_curl(self):
        folder = os.path.join(self.tmp, "www")
        os.makedirs(folder)
        with open(os.path.join(folder, "a.txt"), "w") as f:
            f.write("a" * 3000 + "\n")
        with open(os.path.join(folder, "b.bin"), "wb") as f:
            f.write(bytes(range(256)) * 400)
        port = free_port()
        self.spawn([PYTHON, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", folder],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env())
        wait_port(port)
        base = f"http://127.0.0.1:{port}"
        closed = free_port()
        commands = [
            [CURL, "-s", "-i", f"{base}/a.txt"],
            [CURL, "-s", f"{base}/b.bin", f"{base}/a.txt"],
            [CURL, "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}\n", f"{base}/missing"],
            [CURL, "-sS", "-f", f"{base}/missing"],
            [CURL, "-s", "-I", f"{base}/b.bin"],
            [CURL, "-s", "-X", "POST", "-d", "x=1", "-o", "/dev/null", "-w", "%{http_code}\n", f"{base}/a.txt"],
            [CURL, "-sS", f"http://127.0.0.1:{closed}/"],
        ]
        # Normalized: the Date header (the server's clock; -i and -I print it) and the time curl's error
        # message says a refused connection took ("after 0 ms", sometimes 17-33 ms on a loaded machine,
        # bare as well as traced); nothing else.
        date = re.compile(rb"^Date: .*\r\n", re.M | re.I)
        took = re.compile(rb" after \d+ ms: ")
        col = Collector(self.tmp).start()
        try:
            out = {}
            for side in ("bare", "agent"):
                env = clean_env() if side == "bare" else traced_env(col.endpoint, app="curl", mode="process")
                out[side] = [(s, date.sub(b"Date: -\r\n", o), took.sub(b" after - ms: ", e))
                             for s, o, e in (run(c, env) for c in commands)]
            wait_named(col.db, "curl", {process_name(c) for c in commands})
        finally:
            col.stop()
        for cmd, b, a in zip(commands, out["bare"], out["agent"]):
            self.assertEqual(a, b, cmd)
        statuses = [s for s, _, _ in out["bare"]]
        self.assertEqual(statuses, [0, 0, 0, 22, 0, 0, 7])
        self.check_process_transactions(col.db, "curl", [(c, s, o, e) for c, (s, o, e) in zip(commands, out["bare"])])
        calls = steps(col.db, "curl", "HTTP_CALL")
        for path in ("/a.txt", "/b.bin", "/missing"):
            self.assertTrue(any(f"{base}{path}" in c for c in calls), f"no HTTP_CALL to {path}: {calls}")
        self.assertEqual(len(calls), 8, calls)  # 7 commands, one with two URLs, one refused (no call)
        record("curl", f"{len(commands)} runs: GET/HEAD/POST, 404, -f, refused", ",".join(map(str, statuses)),
               ",".join(str(s) for s, _, _ in out["agent"]), True, count(col.db, "curl"),
               f"{len(calls)} HTTP_CALL rows")

    @matrix_case('git')
    def test_git(self):
        work = os.path.join(self.tmp, "gitwork")
        fixed = {"HOME": os.path.join(work, "home"), "GIT_CONFIG_NOSYSTEM": "1", "TZ": "UTC",
                 "GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.com",
                 "GIT_COMMITTER_NAME": "C O Mitter", "GIT_COMMITTER_EMAIL": "committer@example.com",
                 "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z"}

        def write(path, text):
            def f(w):
                p = os.path.join(w, path)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "a") as fh:
                    fh.write(text)
            return f

        def prepare(w):
            os.makedirs(os.path.join(w, "home"))

        g = lambda *a: [GIT, "-C", "repo", *a]  # noqa: E731
        commands = [
            [GIT, "init", "-q", "-b", "main", "repo"],
            write("repo/README", "hello\n"), write("repo/src/a.c", "int a;\n" * 50),
            g("add", "."), g("commit", "-q", "-m", "first"),
            write("repo/README", "more\n"), g("commit", "-qam", "second"),
            g("checkout", "-q", "-b", "feature"), write("repo/src/b.c", "int b;\n"), g("add", "src/b.c"),
            g("commit", "-q", "-m", "feature work"), g("checkout", "-q", "main"),
            g("merge", "--no-ff", "-q", "-m", "merge feature", "feature"),
            g("log", "--graph", "--format=%H %an <%ae> %ad %s", "--date=iso"),
            g("diff", "HEAD~2", "--stat"), g("show", "HEAD~1"),
            [GIT, "clone", "-q", f"file://{work}/repo", "clone"],
            [GIT, "-C", "clone", "log", "--oneline", "--all"],
            g("gc", "-q"), g("fsck", "--full"), g("count-objects", "-v"),
            g("archive", "--format=tar", "HEAD"), g("status", "--porcelain"),
            g("cat-file", "-p", "HEAD"), g("rev-parse", "no-such-ref"), g("no-such-command"),
        ]
        out, col = self.compare_commands("git", commands, prepare, work, env_extra=fixed)
        statuses = [s for _, s, _, _ in out]
        self.assertEqual(statuses.count(0), len(out) - 2, out)  # all but the bad ref and the bad command
        self.assertIn(b"merge feature", out[[c[1:4] for c, *_ in out].index(["-C", "repo", "log"])][2])
        txs = self.check_process_transactions(col.db, "git", out)
        record("git", f"{len(out)} commands: init, commit, branch, merge, log, diff, local clone, gc, fsck, "
               "archive, errors",
               f"{statuses.count(0)}x0 + {len(out) - statuses.count(0)} errors",
               f"{statuses.count(0)}x0 + {len(out) - statuses.count(0)} errors", True, len(txs),
               "one per command + their child programs")

    @matrix_case('make')
    def test_make(self):
        work = os.path.join(self.tmp, "makework")

        def prepare(w):
            for name, text in (("Makefile", MAKEFILE), ("main.c", MAIN_C), ("util.c", UTIL_C), ("util.h", UTIL_H)):
                with open(os.path.join(w, name), "w") as f:
                    f.write(text)

        commands = [[MAKE, *c] for c in MAKE_COMMANDS]
        out, col = self.compare_commands("make", commands, prepare, work, files=("hello", "out.txt"))
        statuses = [s for _, s, _, _ in out]
        self.assertEqual(statuses, [0, 0, 2, 0, 0, 0, 2], out)
        self.assertIn(b"check passed", out[1][2])
        txs = self.check_process_transactions(col.db, "make", out)
        compilers = [t for t in txs if t[0].startswith("cc ")]
        self.assertEqual(len(compilers), 6, [t[0] for t in txs])  # 2 objects + 1 link, twice
        record("make", "7 runs: build C program (2 objects, link), run, -k failure, -n, clean, -j2 rebuild, bad target",
               ",".join(map(str, statuses)), ",".join(map(str, statuses)), True, len(txs),
               "one per command + cc, cc1, as, ld, sh, …")


if __name__ == "__main__":
    unittest.main()
