"""Compatibility matrix (issue 12): the PostgreSQL 15 server itself (postmaster, a forked backend per
connection, shared memory, signals) under the agent, with pgbench and psql against it. One data folder
(initdb once, bare); the server is started bare, the workload runs, the server stops; then the same with
the server, pgbench and psql all under the agent (the server in HTTP mode, where it records nothing: it
speaks no HTTP; the clients in process mode). pgbench runs with a fixed random seed, so the data it leaves
is the same in both runs.
Compared: every client command's exit status, stdout and stderr (pgbench's timings normalized), the sums
of the tables pgbench wrote, pg_ctl's start and stop, and the server log's WARNING/ERROR/FATAL/PANIC lines
and any child process terminated by a signal (timestamps and pids normalized).
Checked: the agent is mapped in the postmaster and in a backend; pgbench's transactions all completed
with no failure; each client run is a process transaction with its exit status, and pgbench's statements
are SQL rows (at least one per statement pgbench reports)."""
import os
import pwd
import re
import subprocess
import tempfile
import unittest

from compat import agent_loaded, clean_env, matrix_case, print_table, process_name, record, steps, \
    traced_env, transactions, wait_named
from pgserver import PG_BIN, PGBENCH, PSQL, PgServer, available
from txraytest import Collector, TxrayTestCase, free_port, shared_agent, wait_for


def tearDownModule():
    print_table("PostgreSQL server, pgbench, psql")


# Normalized in pgbench's output: the lines that are timings (latency, connection time, tps, the init's
# "done in" and "elapsed" durations).
_PGBENCH_TIME = re.compile(r"^(latency average|latency stddev|initial connection time|tps = )")
# Normalized in the server log: the line prefix (time, pid).
_LOG_PREFIX = re.compile(r"^\S+ \S+ \S+ \[\d+\] ")
# Normalized in pg_ctl's output: the dots it prints while it waits (one per second waited).
_DOTS = re.compile(r"\.{2,}")


def normalize_pgbench(text):
    out = []
    for line in text.splitlines():
        if _PGBENCH_TIME.match(line):
            continue
        line = re.sub(r"done in [0-9.]+ s \(.*\)", "done in - s", line)
        out.append(re.sub(r"\(elapsed [0-9.]+ s, remaining [0-9.]+ s\)", "(elapsed -)", line))
    return "\n".join(out)


class Server(PgServer):
    """PgServer split in two: initdb once, then each run starts a server with a chosen environment on its
    own copy of that fresh data folder (so both runs start from the same state)."""

    def init(self):
        if not available():
            raise unittest.SkipTest(f"PostgreSQL 15 is not installed in {PG_BIN}")
        self.server_env = clean_env()
        self.dir = tempfile.mkdtemp(prefix="txray-pg-")
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o755)  # the collector's tcp endpoint needs no access; the agent library does
        self._run([f"{PG_BIN}/initdb", "-D", os.path.join(self.dir, "fresh"), "-A", "trust", "-U", self.user,
                   "--no-sync", "-E", "UTF8"])
        self.data = None

    def stop(self):
        if self.data and os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.pg_ctl("-m", "immediate", "-w", "stop")
        super().stop()

    def _server_env(self):
        return self.server_env

    def pg_ctl(self, *args, log=None):
        extra = ["-l", log] if log else []
        r = subprocess.run(self._as_server_user([f"{PG_BIN}/pg_ctl", "-D", self.data, *extra, *args]),
                           capture_output=True, text=True, env=self.server_env, timeout=120)
        return r.returncode, _DOTS.sub("...", r.stdout), r.stderr

    def start_with(self, side, env, log):
        self.data = os.path.join(self.dir, side)
        subprocess.run(["cp", "-a", os.path.join(self.dir, "fresh"), self.data], check=True)
        self.server_env = env
        self.port = free_port()
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=20")
        r = self.pg_ctl("-o", opts, "-w", "-t", "60", "start", log=log)
        wait_for(self.psql_ok, timeout=30, what="PostgreSQL accepting queries")
        return r

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())


def server_log(path):
    """The log's lines that tell something went wrong, their prefix removed."""
    with open(path) as f:
        lines = [_LOG_PREFIX.sub("", line.rstrip("\n")) for line in f]
    return sorted(line for line in lines if re.match(r"(WARNING|ERROR|FATAL|PANIC):", line)
                  or "terminated by signal" in line or "was terminated" in line)


class Postgres(TxrayTestCase):
    @matrix_case('postgres, pgbench, psql')
    def test_server_under_the_agent_with_pgbench(self):
        pg = Server()
        pg.init()
        try:
            bare = self.run_side(pg, None)
            col = Collector(self.tmp, endpoint=f"tcp://127.0.0.1:{free_port()}").start()
            try:
                agent = self.run_side(pg, col)
                for app in ("pgbench", "psql"):
                    wait_named(col.db, app, {process_name(c) for k, c in self.commands.items() if k.startswith(app)})
            finally:
                col.stop()
        finally:
            pg.stop()
        for key in bare:
            self.assertEqual(agent[key], bare[key], key)
        self.assertIn("number of transactions actually processed: 400/400", bare["pgbench tpcb"][1])
        self.assertIn("number of failed transactions: 0 (0.000%)", bare["pgbench tpcb"][1])
        self.assertIn("number of transactions actually processed: 300/300", bare["pgbench select"][1])
        self.assertEqual(bare["psql error"][0], 1)
        self.assertRegex(bare["psql sums"][1], r"^100000\|-?\d+\n400\|-?\d+\n1\|-?\d+$")
        self.assertIn('relation "no_such_table" does not exist', bare["psql error"][2])
        self.assertEqual(bare["log"], ['ERROR:  relation "no_such_table" does not exist at character 15'])
        # the agent did its job in the clients: one process transaction per run, with its status
        for app, runs in (("pgbench", ("pgbench init", "pgbench tpcb", "pgbench select")),
                          ("psql", ("psql sums", "psql error"))):
            txs = transactions(col.db, app)
            for key in runs:
                name = process_name(self.commands[key])
                self.assertEqual([t[1] for t in txs if t[0] == name], [bare[key][0]], f"{key}: {txs}")
        sql = steps(col.db, "pgbench", "SQL")
        # tpcb-like: 7 statements a transaction (400), select-only: 1 (300)
        self.assertGreaterEqual(len(sql), 400 * 7 + 300, sql[:5])
        self.assertGreaterEqual(len([s for s in sql if s.startswith("UPDATE pgbench_accounts")]), 400)
        stored = len(transactions(col.db, "postgres"))
        record("postgres", "the server under the agent: pgbench -i, tpcb-like 4 clients x 100, select-only, "
               "psql; pg_ctl start/stop", bare["stop"][0], agent["stop"][0], True, stored,
               "speaks no HTTP: nothing to record; agent mapped in postmaster and backends")
        record("pgbench", "init scale 1, -c 4 -j 2 -t 100 -M prepared, -S -n -c 3 -t 100 -M extended, seed 7",
               bare["pgbench tpcb"][0], agent["pgbench tpcb"][0], True, len(transactions(col.db, "pgbench")),
               f"{len(sql)} SQL rows")
        record("psql", "sums of pgbench's tables; a query of a missing table",
               f"{bare['psql sums'][0]}, {bare['psql error'][0]}", f"{agent['psql sums'][0]}, {agent['psql error'][0]}",
               True, len(transactions(col.db, "psql")), f"{len(steps(col.db, 'psql', 'SQL'))} SQL rows")

    def run_side(self, pg, col):
        side = "agent" if col else "bare"
        log = os.path.join(pg.dir, f"log-{side}")
        def env(app, mode=None):
            return traced_env(col.endpoint, app, mode) if col else clean_env()
        server_env = env("postgres")
        if col:
            # The server runs as postgres, which may not be able to enter the build tree: it loads a copy.
            server_env["LD_PRELOAD"] = shared_agent()
        res = {"start": pg.start_with(side, server_env, log)}
        if col:
            self.assertTrue(agent_loaded(pg.postmaster_pid()), "the agent is not loaded in the postmaster")
        conn = pg.conn_args()
        bench = [PGBENCH, "-h", "127.0.0.1", "-p", str(pg.port), "-U", pg.user]  # pgbench's -d is --debug
        self.commands = {
            "pgbench init": [*bench, "-i", "-s", "1", "-q", pg.database],
            "pgbench tpcb": [*bench, "-c", "4", "-j", "2", "-t", "100", "-M", "prepared", "--random-seed=7",
                             pg.database],
            "pgbench select": [*bench, "-S", "-n", "-c", "3", "-t", "100", "-M", "extended", "--random-seed=7",
                               pg.database],
            "psql sums": [PSQL, *conn, "-X", "-At", "-c",
                          "SELECT count(*), sum(abalance) FROM pgbench_accounts; "
                          "SELECT count(*), sum(delta) FROM pgbench_history; "
                          "SELECT count(*), sum(bbalance) FROM pgbench_branches"],
            "psql error": [PSQL, *conn, "-X", "-c", "SELECT * FROM no_such_table"],
        }
        backend_loaded = []
        for key, cmd in self.commands.items():
            e = pg.client_env(env(cmd[0].rsplit("/", 1)[1], "process"))
            r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)
            res[key] = (r.returncode, normalize_pgbench(r.stdout), normalize_pgbench(r.stderr))
            if col and key == "pgbench init":
                # a backend forked for a connection of its own, while it is alive
                probe = subprocess.Popen([PSQL, *conn, "-X", "-At", "-c", "SELECT pg_backend_pid(), pg_sleep(1)"],
                                         env=pg.client_env(clean_env()), stdout=subprocess.PIPE, text=True)
                pid = wait_for(lambda: self.backend_pid(pg), timeout=10, what="the probe's backend")
                backend_loaded.append(agent_loaded(pid))
                probe.communicate(timeout=30)
        if col:
            self.assertEqual(backend_loaded, [True], "the agent is not loaded in a backend")
        res["stop"] = pg.pg_ctl("-m", "fast", "-w", "stop")
        res["log"] = server_log(log)
        return res

    def backend_pid(self, pg):
        r = subprocess.run([PSQL, *pg.conn_args(), "-X", "-At", "-c",
                            "SELECT pid FROM pg_stat_activity WHERE query LIKE '%pg_sleep(1)' "
                            "AND pid <> pg_backend_pid()"],
                           env=pg.client_env(clean_env()), capture_output=True, text=True)
        return int(r.stdout.split()[0]) if r.returncode == 0 and r.stdout.strip() else None


if __name__ == "__main__":
    unittest.main()
