"""SQL rows from PostgreSQL drivers that speak the wire protocol themselves (agent/protocols/pg), against a
real PostgreSQL 15 (tests/e2e/pgserver.py) and a real collector, the services under `txray run`:
- asyncpg (Debian python3-asyncpg) in an asyncio server with a pool of up to 8 connections;
- node-postgres `pg` (tests/e2e/drivers/node_modules) in a Node.js `http` server with a pg.Pool;
- PostgreSQL JDBC (/usr/share/java/postgresql.jar) in a JDK HttpServer with an 8-thread pool, one
  connection per thread (compiled with javac at test time).
Each serves GET /r/<id> with `SELECT name FROM items WHERE id = $1` ($1 = id) and GET /bad/<id> with a
query on a missing table, driven by 8 concurrent keep-alive clients, a unique id per request. Checked:
>= 99% of the requests hold exactly one row of that statement, with its text, its params (masked by
default; under TXRAY_SQL=raw the request's own id: the row is in the right request) and 1 row; no row in a
request whose id is not its parameter; every failing request's row has sqlstate 42P01; a DB_CONNECT row
with database and user.
And libpq clients (pgbench -M simple / extended / prepared, psql), whose connections the dispatch leaves
to the libpq hooks: the same statements and counts as the hooks alone give, no statement twice."""
import collections
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pgserver import PGBENCH, PSQL, PgServer  # noqa: E402
from txraytest import (AGENT, SOURCE_DIR, TXRAY, Collector, TxrayTestCase, agent_env, bare_env, show_json,  # noqa: E402
                       wait_for, wait_port, free_port, wait_transactions, count_transactions, get_all)

PY = "/usr/bin/python3"  # Debian's python3-asyncpg installs for it (PITFALLS)
NODE = "/usr/bin/node"
JAVA, JAVAC = "/usr/bin/java", "/usr/bin/javac"
JDBC_JAR = "/usr/share/java/postgresql.jar"
PG_MODULE = os.path.join(SOURCE_DIR, "tests", "e2e", "drivers", "node_modules", "pg")

REQUESTS = 160      # GET /r/<id>, ids 0..REQUESTS-1
BAD = 8             # GET /bad/<id>, ids REQUESTS..REQUESTS+BAD-1
CLIENTS = 8
STATEMENT = "SELECT name FROM items WHERE id = $1"

ASYNCPG_SERVICE = r'''
import asyncio, sys
import asyncpg

async def main(port, pg_port):
    pool = await asyncpg.create_pool(host="127.0.0.1", port=pg_port, user="postgres", database="postgres",
                                     min_size=0, max_size=8)  # connects inside the first requests

    async def handle(reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
                kind, rid = line.split()[1].decode().split("/")[1:3]
                status = 200
                try:
                    if kind == "r":
                        row = await pool.fetchrow("SELECT name FROM items WHERE id = $1", int(rid))
                        body = f"r {rid} {row['name']}"
                    else:
                        await pool.fetchrow("SELECT name FROM missing_table WHERE id = $1", int(rid))
                        body = "unexpected"
                except asyncpg.PostgresError as e:
                    status, body = 500, f"bad {rid} {e.sqlstate}"
                b = body.encode()
                writer.write(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(b), b))
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    async with server:
        await server.serve_forever()

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
'''

NODE_SERVICE = r'''
const http = require("http");
const { Pool } = require(process.argv[4]);
const pool = new Pool({ host: "127.0.0.1", port: +process.argv[3], user: "postgres", database: "postgres", max: 8 });
http.createServer(async (req, res) => {
  const [, kind, rid] = req.url.split("/");
  let status = 200, body;
  try {
    if (kind === "r") {
      const r = await pool.query("SELECT name FROM items WHERE id = $1", [+rid]);
      body = `r ${rid} ${r.rows[0].name}`;
    } else {
      await pool.query("SELECT name FROM missing_table WHERE id = $1", [+rid]);
      body = "unexpected";
    }
  } catch (e) {
    status = 500;
    body = `bad ${rid} ${e.code}`;
  }
  res.writeHead(status, { "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}).listen(+process.argv[2], "127.0.0.1");
'''

JAVA_SERVICE = r'''
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import java.util.concurrent.Executors;

// GET /r/<id>, /bad/<id> on an 8-thread pool, one JDBC connection per thread. Usage: Service PORT PG_PORT
public class Service {
  public static void main(String[] a) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + a[1] + "/postgres?user=postgres";
    ThreadLocal<Connection> conn = new ThreadLocal<>();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(a[0])), 256);
    server.createContext("/", ex -> {
      String[] parts = ex.getRequestURI().getPath().split("/");
      int id = Integer.parseInt(parts[2]);
      int status = 200;
      String body;
      try {
        if (conn.get() == null) conn.set(DriverManager.getConnection(url));
        String q = parts[1].equals("r") ? "SELECT name FROM items WHERE id = ?" : "SELECT name FROM missing_table WHERE id = ?";
        try (PreparedStatement p = conn.get().prepareStatement(q)) {
          p.setInt(1, id);
          try (ResultSet r = p.executeQuery()) {
            body = r.next() ? "r " + id + " " + r.getString(1) : "none";
          }
        }
      } catch (SQLException e) {
        status = 500;
        body = "bad " + id + " " + e.getSQLState();
      }
      byte[] out = body.getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(status, out.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(out);
      }
    });
    server.setExecutor(Executors.newFixedThreadPool(8));
    server.start();
  }
}
'''


def drive(port):
    """GET /r/<i> for every i < REQUESTS and /bad/<i> for REQUESTS <= i < REQUESTS + BAD over CLIENTS keep-alive
    connections at once; {path: (status, body)}."""
    paths = [f"/r/{i}" for i in range(REQUESTS)] + [f"/bad/{i}" for i in range(REQUESTS, REQUESTS + BAD)]
    out, errors = get_all(port, paths, CLIENTS)
    if errors:
        raise AssertionError(f"client errors: {errors[:3]}")
    return out


def count_app(db, app):
    return count_transactions(db, app, "GET /%")


def connect_rows(db, app):
    """DB_CONNECT rows of the app, in requests and in its unattributed container: (text, attributes)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT x.text, s.attributes FROM steps s JOIN transactions t ON t.id = s.tx_id "
                           "LEFT JOIN texts x ON x.id = s.text_id WHERE t.app = ? AND s.kind = 'DB_CONNECT'",
                           (app,)).fetchall()
    finally:
        con.close()
    return [(t, json.loads(a) if a else {}) for t, a in rows]


@unittest.skipUnless(os.path.exists(AGENT), "the agent library is not built")
class WireDrivers(TxrayTestCase):
    pg = None

    @classmethod
    def setUpClass(cls):
        cls.pg = PgServer().start()
        r = subprocess.run([PSQL, "-X", *cls.pg.conn_args(), "-c",
                            "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL); "
                            f"INSERT INTO items SELECT g, 'item-' || g FROM generate_series(0, {REQUESTS - 1}) g"],
                           env=cls.pg.client_env(bare_env()), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def serve(self, app, cmd, raw, cwd=None):
        """Runs the service under `txray run`, drives it, stops it; returns its request transactions
        {path: tx} and its DB_CONNECT rows."""
        env = bare_env()
        env["TXRAY_SQL"] = "raw" if raw else "mask"
        port = free_port()
        with Collector(self.tmp) as col:
            log = open(os.path.join(self.tmp, f"{app}.log"), "wb")
            proc = self.spawn([TXRAY, "run", "--collector", col.endpoint, "--app", app, "--",
                               *[{"{port}": str(port), "{pg}": str(self.pg.port)}.get(a, a) for a in cmd]],
                              env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
            wait_port(port, timeout=60)
            answers = drive(port)
            for i in range(REQUESTS):
                self.assertEqual(answers[f"/r/{i}"], (200, f"r {i} item-{i}"))
            for i in range(REQUESTS, REQUESTS + BAD):
                self.assertEqual(answers[f"/bad/{i}"], (500, f"bad {i} 42P01"))
            wait_for(lambda: count_app(col.db, app) >= REQUESTS + BAD, 60, what=f"{app} transactions")
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            log.close()
            time.sleep(1.5)  # the last batch, with the unattributed container
            txs = show_json(col.db, "--app", app, "--last", str(10 * (REQUESTS + BAD)))
            connects = connect_rows(col.db, app)
        front = {t["name"].split(" ", 1)[1]: t for t in txs if t.get("kind") != "unattributed" and
                 t["name"].startswith("GET /")}
        self.assertEqual(len(front), REQUESTS + BAD)
        return front, connects

    def check(self, app, cmd, mask_params, cwd=None):
        for raw in (False, True):
            front, connects = self.serve(f"{app}-{'raw' if raw else 'mask'}", cmd, raw, cwd)
            exact = wrong = 0
            for i in range(REQUESTS):
                rows = [s for s in front[f"/r/{i}"]["steps"] if s["kind"] == "SQL" and s["text"] == STATEMENT]
                params = [s.get("attributes", {}).get("params") for s in rows]
                want = f"'{i}'" if raw else mask_params
                if raw:
                    wrong += sum(1 for p in params if p != want)
                elif len(rows) > 1:
                    wrong += len(rows) - 1  # another request's execution (masked: not told apart by value)
                if [(p, s["rows"], s["error"]) for p, s in zip(params, rows)] == [(want, 1, "")]:
                    exact += 1
            failed = 0
            for i in range(REQUESTS, REQUESTS + BAD):
                tx = front[f"/bad/{i}"]
                rows = [s for s in tx["steps"] if s["kind"] == "SQL" and "missing_table" in s["text"]]
                if len(rows) == 1 and rows[0].get("attributes", {}).get("sqlstate") == "42P01" and \
                        rows[0]["error"] == 'ERROR 42P01: relation "missing_table" does not exist':
                    failed += 1
            line = (f"{app} ({'raw' if raw else 'mask'}): {REQUESTS} requests over {CLIENTS} clients: exact {exact} "
                    f"({100.0 * exact / REQUESTS:.2f}%), wrong {wrong}; failing {failed}/{BAD} with 42P01; "
                    f"{len(connects)} DB_CONNECT rows")
            print(line, flush=True)
            self.assertEqual(wrong, 0, line)
            self.assertGreaterEqual(exact, 0.99 * REQUESTS, line)
            self.assertEqual(failed, BAD, line)
            label = f"postgresql://postgres@127.0.0.1:{self.pg.port}/postgres"
            self.assertTrue(connects and all(t == label for t, _ in connects), (label, connects))
            for _, attrs in connects:
                self.assertEqual((attrs.get("database"), attrs.get("user"), attrs.get("port")),
                                 ("postgres", "postgres", str(self.pg.port)))

    def test_asyncpg(self):
        self.check("asyncpg", [PY, "-c", ASYNCPG_SERVICE, "{port}", "{pg}"], "binary")

    def test_node_postgres(self):
        # The rows land in the right request once the Node.js shim names the request of each socket write
        # (agent/runtimes/node/txray-hints.js).
        self.check("node-pg", [NODE, "-e", NODE_SERVICE, "x", "{port}", "{pg}", PG_MODULE], "text")

    def test_jdbc(self):
        src = os.path.join(self.tmp, "Service.java")
        with open(src, "w") as f:
            f.write(JAVA_SERVICE)
        subprocess.run([JAVAC, "-d", self.tmp, src], check=True, capture_output=True, timeout=300)
        self.check("jdbc", [JAVA, "-cp", f"{self.tmp}:{JDBC_JAR}", "Service", "{port}", "{pg}"], "binary")


def executions(tx):
    """text -> count over the SQL rows and the summary lines (rows folded past the step limit)."""
    count = collections.Counter()
    for s in tx["steps"]:
        if s["kind"] == "SQL":
            count[s["text"]] += 1
    for s in tx.get("summary") or []:
        if s["kind"] == "SQL":
            count[s["text"]] += s["count"]
    return count


@unittest.skipUnless(os.path.exists(AGENT), "the agent library is not built")
class LibpqNotTwice(TxrayTestCase):
    """libpq's connections are the libpq hooks' (the dispatch sees their writes inside the hooks' guard):
    every statement once, as test_sql_pg.py has them."""
    pg = None
    TRANSACTIONS = 50

    @classmethod
    def setUpClass(cls):
        cls.pg = PgServer().start()
        subprocess.run([PGBENCH, "-i", "-q", *cls.pg.conn_args()[:-2], cls.pg.database],
                       env=cls.pg.client_env(bare_env()), check=True, capture_output=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def traced(self, args):
        with Collector(self.tmp) as col:
            r = subprocess.run(args, env=self.pg.client_env(agent_env(col.endpoint, mode="process")),
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            wait_transactions(col.db, 1)
        [tx] = show_json(col.db, "--last", "5")
        return r, tx

    def check_pgbench(self, mode, texts):
        r, tx = self.traced([PGBENCH, "-n", "-M", mode, "-t", str(self.TRANSACTIONS), *self.pg.conn_args()[:-2],
                             self.pg.database])
        processed = int(re.search(r"actually processed: (\d+)/", r.stdout).group(1))
        self.assertEqual(processed, self.TRANSACTIONS)
        count = executions(tx)
        self.assertEqual({t: count[t] for t in texts}, {t: processed for t in texts})
        # pgbench's own set-up queries and its PREPAREs (-M prepared): once each, as the hooks alone give.
        others = {t: n for t, n in count.items() if t not in texts}
        self.assertEqual(others, {t: 1 for t in others})
        self.assertEqual(len([t for t in others if t.startswith("PREPARE ")]), len(texts) if mode == "prepared" else 0)
        self.assertEqual(tx["sql_count"], sum(count.values()))
        print(f"pgbench -M {mode}: {sum(count.values())} SQL rows for {processed} transactions", flush=True)

    def test_pgbench_simple(self):
        self.check_pgbench("simple", [
            "BEGIN;", "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = ?;",
            "UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?;",
            "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?;",
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP);",
            "END;"])

    PARAMS = ["BEGIN;", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;",
              "SELECT abalance FROM pgbench_accounts WHERE aid = $1;",
              "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2;",
              "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;",
              "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);",
              "END;"]

    def test_pgbench_extended(self):
        self.check_pgbench("extended", self.PARAMS)

    def test_pgbench_prepared(self):
        self.check_pgbench("prepared", self.PARAMS)

    def test_psql_multi_statement_query_is_one_libpq_row(self):
        _, tx = self.traced([PSQL, "-X", *self.pg.conn_args(), "-c", "SELECT 1; SELECT 2"])
        sql = [s for s in tx["steps"] if s["kind"] == "SQL"]
        self.assertEqual([s["text"] for s in sql], ["SELECT ?; SELECT ?"])
        self.assertEqual(tx["sql_count"], 1)
        self.assertEqual(len([s for s in tx["steps"] if s["kind"] == "DB_CONNECT"]), 1)


if __name__ == "__main__":
    unittest.main()
