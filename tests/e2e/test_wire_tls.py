"""SQL rows from the wire over TLS: drivers that speak the PostgreSQL or MySQL protocol themselves and
encrypt it with libssl on their own socket. The connection starts in the clear (PostgreSQL's SSLRequest
answered 'S', MySQL's SSL request packet), the dispatch's wire client then stops reading the socket's
records, and the OpenSSL hooks (agent/hooks/ssl_hooks.cpp) feed it the plaintext of SSL_read/SSL_write on
that socket. The servers refuse clients that do not use TLS (pgserver.py / mariadbserver.py with ssl=True),
so every row here came through TLS:
- pg8000 (Debian python3-pg8000; Python's ssl module, an SSLSocket: libssl on the socket's descriptor) in
  a threaded http.server, one connection per thread;
- PyMySQL with an ssl context, the same way;
- PHP's PDO over mysqlnd with PDO::MYSQL_ATTR_SSL_CA (PHP's OpenSSL streams), one php process per
  request in process mode.
Each front answers many requests from 8 concurrent clients, a unique id per request: >= 99% of them hold
exactly their own row, with the id in its params/binds under TXRAY_SQL=raw, 0 rows in a wrong request, and
a missing table's row carries its SQLSTATE.
And TLS the agent cannot see inside: node-postgres and mysql2 with `ssl` (Node's OpenSSL is linked into the
node binary, so its SSL_read/SSL_write are not libssl's), asyncpg with `ssl` (asyncio runs libssl on memory
BIOs: the SSL object names no socket) and PostgreSQL JDBC with sslmode=require (the JVM's JSSE): the
requests are answered, no SQL row is made anywhere, and each of their connections is counted once as a
stream not parsed, at its first TLS record (the collector's status line)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from mariadbserver import MariaDbServer, available as mariadb_available  # noqa: E402
from pgserver import PSQL, PgServer, available as pg_available  # noqa: E402
from txraytest import (AGENT, PYTHON, SOURCE_DIR, TXRAY, Collector, TxrayTestCase, bare_env,  # noqa: E402
                       count_transactions, free_port, get_all, show_json, wait_for, wait_port)

NODE = "/usr/bin/node"
JAVA, JAVAC = "/usr/bin/java", "/usr/bin/javac"
JDBC_JAR = "/usr/share/java/postgresql.jar"
NODE_MODULES = os.path.join(SOURCE_DIR, "tests", "e2e", "drivers", "node_modules")
PG_MODULE = os.path.join(NODE_MODULES, "pg")
REQUESTS = 160  # GET /r/<id>, ids 1..REQUESTS
BAD = 8         # GET /bad/<id>, ids REQUESTS+1..REQUESTS+BAD
CLIENTS = 8


def have(module):
    return subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True).returncode == 0


# pg8000 1.10 (Debian 12): ssl=True wraps its socket with Python's ssl module after the server's 'S'.
PG8000_FRONT = r'''
import http.server, socketserver, sys, threading
import pg8000

PORT, DB_PORT = int(sys.argv[1]), int(sys.argv[2])
local = threading.local()

def conn():
    if not hasattr(local, "c"):
        local.c = pg8000.connect(user="postgres", host="127.0.0.1", port=DB_PORT, database="postgres", ssl=True)
        local.c.autocommit = True
    return local.c

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        kind, rid = self.path.split("/")[1:3]
        cur = conn().cursor()
        try:
            cur.execute("SELECT name FROM %s WHERE id = %%s" % ("items" if kind == "r" else "missing_table"),
                        (int(rid),))
            body = f"{rid} {cur.fetchone()[0]}"
        except pg8000.ProgrammingError as e:
            body = f"{rid} error {e.args[2] if len(e.args) > 2 else e.args}"
        finally:
            cur.close()
        b = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

S(("127.0.0.1", PORT), H).serve_forever()
'''

# PyMySQL: the SSL request packet, then Python's ssl module on the socket (verified against the test CA).
PYMYSQL_FRONT = r'''
import http.server, socketserver, sys, threading
import pymysql

PORT, DB_PORT, CA = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
local = threading.local()

def conn():
    if not hasattr(local, "c"):
        local.c = pymysql.connect(host="127.0.0.1", port=DB_PORT, user="root", database="txray", autocommit=True,
                                  ssl={"ca": CA})
    return local.c

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        kind, rid = self.path.split("/")[1:3]
        with conn().cursor() as cur:
            try:
                cur.execute("SELECT name FROM %s WHERE id = %%s" % ("people" if kind == "r" else "missing_table"),
                            (int(rid),))
                body = f"{rid} {cur.fetchone()[0]}"
            except pymysql.MySQLError as e:
                body = f"{rid} error {e.args[0]}"
        b = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

S(("127.0.0.1", PORT), H).serve_forever()
'''

# PHP's PDO over mysqlnd with TLS; argv: port, id, emulate (1: the value in the text, 0: a native prepare
# with a binary bind), table, CA file.
PDO_ONE = r'''<?php
$db = new PDO("mysql:host=127.0.0.1;port={$argv[1]};dbname=txray", "root", "",
              [PDO::ATTR_EMULATE_PREPARES => $argv[3] === "1", PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
               PDO::MYSQL_ATTR_SSL_CA => $argv[5], PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => false]);
try {
  $s = $db->prepare("SELECT name FROM {$argv[4]} WHERE id = ?");
  $s->execute([(int)$argv[2]]);
  echo $argv[2], " ", $s->fetchColumn(), "\n";
} catch (PDOException $e) {
  echo $argv[2], " error ", $e->errorInfo[1], "\n";
}
'''

# node-postgres with TLS: Node's own OpenSSL, not libssl. SIGTERM ends the pool (its sockets close, where
# the agent counts the streams it could not read) and prints how many connections it made.
NODE_PG_FRONT = r'''
const http = require("http");
const { Pool } = require(process.argv[4]);
const pool = new Pool({ host: "127.0.0.1", port: +process.argv[3], user: "postgres", database: "postgres", max: 8,
                        ssl: { rejectUnauthorized: false } });
let made = 0;
pool.on("connect", () => made++);
const server = http.createServer(async (req, res) => {
  const rid = req.url.split("/")[2];
  let body;
  try {
    const r = await pool.query("SELECT name FROM items WHERE id = $1", [+rid]);
    body = `${rid} ${r.rows[0].name}`;
  } catch (e) {
    body = `${rid} error ${e.code}`;
  }
  res.writeHead(200, { "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}).listen(+process.argv[2], "127.0.0.1");
process.on("SIGTERM", () => {
  server.close();
  pool.end().then(() => { console.log(`connections ${made}`); process.exit(0); });
});
'''


def ids(text, binds):
    """The ids a row names: the numbers of its binds, and a number compared in its text (`id = 42`)."""
    return {int(w) for w in re.findall(r"\d+", binds)} | {int(w) for w in re.findall(r"= (\d+)", text)}


# asyncpg with TLS: asyncio's SSL protocol runs libssl on memory BIOs, and the event loop moves the records
# between them and the socket itself, so no SSL object names the socket.
ASYNCPG_FRONT = r'''
import asyncio, signal, ssl, sys
import asyncpg

async def main(port, pg_port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    made = 0

    async def init(conn):
        nonlocal made
        made += 1

    pool = await asyncpg.create_pool(host="127.0.0.1", port=pg_port, user="postgres", database="postgres",
                                     min_size=0, max_size=8, ssl=ctx, init=init)

    async def handle(reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
                rid = line.split()[1].decode().split("/")[2]
                row = await pool.fetchrow("SELECT name FROM items WHERE id = $1", int(rid))
                b = f"{rid} {row['name']}".encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b))
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    server.close()
    await pool.close()
    print(f"connections {made}", flush=True)

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
'''

# mysql2 with TLS: Node's own OpenSSL again, after MySQL's SSL request packet.
MYSQL2_FRONT = r'''
const http = require("http");
const mysql = require(process.argv[4] + "/mysql2");
const pool = mysql.createPool({ host: "127.0.0.1", port: +process.argv[3], user: "root", database: "txray",
                                connectionLimit: 4, ssl: { rejectUnauthorized: false } });
let made = 0;
pool.on("connection", () => made++);
const server = http.createServer((req, res) => {
  const rid = req.url.split("/")[2];
  pool.execute("SELECT name FROM people WHERE id = ?", [+rid], (e, rows) => {
    const body = e ? `${rid} error ${e.errno}` : `${rid} ${rows[0].name}`;
    res.writeHead(200, { "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  });
}).listen(+process.argv[2], "127.0.0.1");
process.on("SIGTERM", () => {
  server.close();
  pool.end(() => { console.log(`connections ${made}`); process.exit(0); });
});
'''


# PostgreSQL JDBC with sslmode=require: the JVM's own TLS (JSSE), one connection per worker thread. The
# shutdown hook (SIGTERM) prints how many connections it made.
JDBC_FRONT = r'''
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

public class TlsService {
  public static void main(String[] a) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + a[1] + "/postgres?user=postgres&sslmode=require";
    AtomicInteger made = new AtomicInteger();
    ThreadLocal<Connection> conn = new ThreadLocal<>();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(a[0])), 256);
    server.createContext("/", ex -> {
      int id = Integer.parseInt(ex.getRequestURI().getPath().split("/")[2]);
      String body;
      try {
        if (conn.get() == null) {
          conn.set(DriverManager.getConnection(url));
          made.incrementAndGet();
        }
        try (PreparedStatement p = conn.get().prepareStatement("SELECT name FROM items WHERE id = ?")) {
          p.setInt(1, id);
          try (ResultSet r = p.executeQuery()) {
            body = r.next() ? id + " " + r.getString(1) : "none";
          }
        }
      } catch (SQLException e) {
        body = id + " error " + e.getSQLState();
      }
      byte[] out = body.getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, out.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(out);
      }
    });
    server.setExecutor(Executors.newFixedThreadPool(8));
    Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("connections " + made.get())));
    server.start();
  }
}
'''


def rows_of(tx, table):
    return [s for s in tx["steps"] if s["kind"] == "SQL" and s["text"].startswith(f"SELECT name FROM {table}")]


class Tls(TxrayTestCase):

    def serve(self, app, cmd, raw, paths):
        """The front under `txray run` ("{port}" in cmd its port), driven with every path by CLIENTS clients at
        once, stopped with SIGTERM; ({path: answer}, {path: transaction}, every transaction of the app, the
        collector's log, the front's output)."""
        env = bare_env({"TXRAY_SQL": "raw" if raw else "mask"})
        env.pop("NODE_OPTIONS", None)
        port = free_port()
        with Collector(self.tmp) as col:
            out = os.path.join(self.tmp, f"{app}.log")
            with open(out, "wb") as log:
                args = [str(port) if a == "{port}" else a for a in cmd]
                p = self.spawn([TXRAY, "run", "--collector", col.endpoint, "--app", app, "--", *args], env=env,
                               stdout=log, stderr=subprocess.STDOUT)
                wait_port(port, 60)
                answers, errors = get_all(port, paths, CLIENTS)
                self.assertEqual(errors, [])
                try:
                    wait_for(lambda: count_transactions(col.db, app) >= len(paths), 60, what=f"{app} transactions")
                except AssertionError:
                    got = {t["name"] for t in show_json(col.db, "--app", app, "--last", str(10 * len(paths)))}
                    missing = [x for x in paths if f"GET {x}" not in got]
                    raise AssertionError(f"{app}: {len(missing)} of {len(paths)} requests have no transaction "
                                         f"({missing[:5]}…); collector: {col.log_text()[-600:]}") from None
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)
            time.sleep(1.5)  # the last batch, with the unattributed container and the counters
            txs = show_json(col.db, "--app", app, "--last", str(10 * len(paths)))
        with open(out, errors="replace") as f:
            output = f.read()
        front = {t["name"].split(" ", 1)[1]: t for t in txs if t.get("kind") != "unattributed"}
        return {k: v for k, (_, v) in answers.items()}, front, txs, col.log_text(), output

    def check(self, name, reqs, front, raw, text, bind_of, table, sqlstate):
        """reqs: [(kind, id)] with kind 'r' or 'bad'; text(id) the row's text. Counts the requests holding
        exactly their own row (raw: with their own id), and fails on any row with another request's id."""
        own, wrong, missing = 0, [], []
        for k, i in reqs:
            t = front[f"/{k}/{i}"]
            for s in t["steps"]:
                if s["kind"] != "SQL":
                    continue
                nums = ids(s["text"], bind_of(s))
                if raw and nums and i not in nums:
                    wrong.append((k, i, s["text"], bind_of(s)))
            if k == "r":
                rows = rows_of(t, table)
                ok = (len(rows) == 1 and rows[0]["text"] == text(i) and rows[0].get("rows") == 1
                      and not rows[0]["error"])
                if ok and raw:  # the request's own id, in the binds or the text
                    ok = i in ids(rows[0]["text"], bind_of(rows[0]))
            else:
                rows = [s for s in t["steps"] if s["kind"] == "SQL" and "missing_table" in s["text"] and s["error"]]
                ok = len(rows) == 1 and rows[0].get("attributes", {}).get("sqlstate") == sqlstate
            own += ok
            if not ok and len(missing) < 3:
                missing.append((k, i, [(s["kind"], s["text"][:60], s.get("rows"), bind_of(s)) for s in t["steps"]
                                       if s["kind"] not in ("START", "END")]))
        line = f"{name}: {own}/{len(reqs)} requests hold their own row over TLS, {len(wrong)} in a wrong request"
        print(line, flush=True)
        self.assertEqual(wrong, [], line)
        self.assertGreaterEqual(own, 0.99 * len(reqs), f"{line}; without their row: {missing}")

    def unseen(self, name, cmd, db_port, prefix):
        """A driver whose TLS the agent cannot see inside (answers "<id> <prefix><id>"): its connections are
        sockets, no statement of theirs is a row, and each connection is counted once as a stream not parsed
        (the collector's status line; the front prints "connections N" when it stops)."""
        paths = [f"/r/{i}" for i in range(1, REQUESTS + 1)]
        answers, front, txs, log, output = self.serve(f"{name}-tls", cmd, True, paths)
        for i in range(1, REQUESTS + 1):
            self.assertEqual(answers[f"/r/{i}"], f"{i} {prefix}{i}")
        self.assertEqual(len(front), REQUESTS)
        made = int(re.search(r"connections (\d+)", output).group(1))
        steps = [s for t in txs for s in t["steps"]]
        self.assertEqual([s for s in steps if s["kind"] in ("SQL", "DB_CONNECT")], [])
        # (A pool's later connections may be connected where no request can be named, Node's from a DNS
        # lookup callback: the first request's SOCKET row at least is in a request.)
        self.assertTrue([s for t in front.values() for s in t["steps"]
                         if s["kind"] == "SOCKET" and s["text"].endswith(f":{db_port}")])  # the JVM's: ::ffff:…
        counted = [int(n) for n in re.findall(r"agents stopped parsing (\d+) connections", log)]
        print(f"{name} over TLS: {made} connections, {max(counted, default=0)} counted as not parsed", flush=True)
        self.assertGreater(made, 0)
        self.assertEqual(max(counted, default=0), made, log[-2000:])


def requests():
    return [("r", i) for i in range(1, REQUESTS + 1)] + [("bad", i) for i in range(REQUESTS + 1, REQUESTS + BAD + 1)]


@unittest.skipUnless(os.path.exists(AGENT) and pg_available(), "needs the agent and PostgreSQL 15")
class PostgresTls(Tls):
    pg = None

    @classmethod
    def setUpClass(cls):
        cls.pg = PgServer(ssl=True).start()
        r = subprocess.run([PSQL, "-X", *cls.pg.conn_args(), "-c",
                            "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL); "
                            f"INSERT INTO items SELECT g, 'item-' || g FROM generate_series(1, {REQUESTS}) g"],
                           env=cls.pg.client_env(bare_env()), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def test_server_refuses_plaintext(self):
        r = subprocess.run([PSQL, "-X", *self.pg.conn_args(), "-Atc", "select 1"], capture_output=True, text=True,
                           env=self.pg.client_env(bare_env({"PGSSLMODE": "disable"})), timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no encryption", r.stderr)

    @unittest.skipUnless(have("pg8000"), "python3-pg8000 is not installed")
    def test_pg8000(self):
        reqs = requests()
        paths = [f"/{k}/{i}" for k, i in reqs]
        cmd = [PYTHON, "-c", PG8000_FRONT, "{port}", str(self.pg.port)]
        for raw in (True, False):
            answers, front, _, _, _ = self.serve(f"pg8000-tls-{raw}", cmd, raw, paths)
            for k, i in reqs:
                self.assertEqual(answers[f"/{k}/{i}"], f"{i} item-{i}" if k == "r" else f"{i} error 42P01")
            self.check(f"pg8000 ({'raw' if raw else 'mask'})", reqs, front, raw,
                       lambda i: "SELECT name FROM items WHERE id = $1",
                       lambda s: s.get("attributes", {}).get("params", ""), "items", "42P01")
            connects = [s for t in front.values() for s in t["steps"] if s["kind"] == "DB_CONNECT"]
            self.assertTrue(connects)
            self.assertEqual({s["text"] for s in connects},
                             {f"postgresql://postgres@127.0.0.1:{self.pg.port}/postgres"})

    @unittest.skipUnless(os.path.exists(NODE) and os.path.isdir(PG_MODULE), "needs node and node-postgres")
    def test_node_postgres_tls_is_a_counted_socket(self):
        self.unseen("node-postgres", [NODE, "-e", NODE_PG_FRONT, "x", "{port}", str(self.pg.port), PG_MODULE],
                    self.pg.port, "item-")

    @unittest.skipUnless(os.path.exists(JAVAC) and os.path.exists(JDBC_JAR), "needs javac and libpostgresql-jdbc-java")
    def test_jdbc_tls_is_a_counted_socket(self):
        src = os.path.join(self.tmp, "TlsService.java")
        with open(src, "w") as f:
            f.write(JDBC_FRONT)
        subprocess.run([JAVAC, "-d", self.tmp, src], check=True, capture_output=True, timeout=300)
        self.unseen("jdbc", [JAVA, "-cp", f"{self.tmp}:{JDBC_JAR}", "TlsService", "{port}", str(self.pg.port)],
                    self.pg.port, "item-")

    @unittest.skipUnless(have("asyncpg"), "python3-asyncpg is not installed")
    def test_asyncpg_tls_is_a_counted_socket(self):
        self.unseen("asyncpg", [PYTHON, "-c", ASYNCPG_FRONT, "{port}", str(self.pg.port)], self.pg.port, "item-")


@unittest.skipUnless(os.path.exists(AGENT) and mariadb_available(), "needs the agent and mariadb-server")
class MysqlTls(Tls):
    server = None

    @classmethod
    def setUpClass(cls):
        cls.server = MariaDbServer(ssl=True).start()
        values = ",".join(f"({i},'p{i}')" for i in range(1, REQUESTS + BAD + 1))
        cls.server.sql("CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(32)); "
                       f"INSERT INTO people VALUES {values}")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_server_refuses_plaintext(self):
        args = [a for a in self.server.client_args() if a != "--ssl"]
        r = subprocess.run(["/usr/bin/mariadb", *args, "--skip-ssl", "-N", "-e", "select 1"], capture_output=True,
                           text=True, env=bare_env(), timeout=60)
        # MariaDB 10.11 answers a plaintext login under require_secure_transport with 1045; the same
        # arguments with TLS log in (setUpClass ran its SQL so).
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ERROR 1045", r.stderr)
        self.assertTrue(self.server.client_ok())

    @unittest.skipUnless(have("pymysql"), "python3-pymysql is not installed")
    def test_pymysql(self):
        reqs = requests()
        paths = [f"/{k}/{i}" for k, i in reqs]
        cmd = [PYTHON, "-c", PYMYSQL_FRONT, "{port}", str(self.server.port), self.server.cert]
        for raw in (True, False):
            answers, front, _, _, _ = self.serve(f"pymysql-tls-{raw}", cmd, raw, paths)
            for k, i in reqs:
                self.assertEqual(answers[f"/{k}/{i}"], f"{i} p{i}" if k == "r" else f"{i} error 1146")
            # PyMySQL puts the value into the text itself (no binds on the wire).
            self.check(f"pymysql ({'raw' if raw else 'mask'})", reqs, front, raw,
                       lambda i: f"SELECT name FROM people WHERE id = {i if raw else '?'}",
                       lambda s: s.get("attributes", {}).get("binds", ""), "people", "42S02")

    @unittest.skipUnless(os.path.exists(NODE) and os.path.isdir(os.path.join(NODE_MODULES, "mysql2")), "needs mysql2")
    def test_mysql2_tls_is_a_counted_socket(self):
        self.unseen("mysql2", [NODE, "-e", MYSQL2_FRONT, "x", "{port}", str(self.server.port), NODE_MODULES],
                    self.server.port, "p")

    @unittest.skipUnless(shutil.which("php"), "needs php")
    def test_php_pdo(self):
        script = os.path.join(self.tmp, "pdo_tls.php")
        with open(script, "w") as f:
            f.write(PDO_ONE)
        jobs = [(e, 1 + 2 * j + int(e)) for j in range(24) for e in ("1", "0")]
        with Collector(self.tmp) as col:
            env = bare_env({"TXRAY_SQL": "raw"})
            for k in range(0, len(jobs), CLIENTS):  # CLIENTS php processes at once
                batch = [(e, i, subprocess.Popen(
                    [TXRAY, "run", "--collector", col.endpoint, "--app", f"php-tls-{i}", "--mode", "process", "--",
                     shutil.which("php"), script, str(self.server.port), str(i), e, "people", self.server.cert],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
                    for e, i in jobs[k:k + CLIENTS]]
                for e, i, p in batch:
                    out, _ = p.communicate(timeout=60)
                    self.assertEqual(out.strip(), f"{i} p{i}")
            bad = subprocess.run([TXRAY, "run", "--collector", col.endpoint, "--app", "php-tls-bad", "--mode", "process",
                                  "--", shutil.which("php"), script, str(self.server.port), "7", "0", "missing_table",
                                  self.server.cert], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(bad.stdout.strip(), "7 error 1146")
            wait_for(lambda: count_transactions(col.db) >= len(jobs) + 1, 60, what="php transactions")
            time.sleep(1.5)
            by_app = {}
            for t in show_json(col.db, "--last", str(10 * len(jobs))):
                if t.get("kind") != "unattributed":
                    by_app.setdefault(t["app"], []).append(t)
        own, wrong = 0, []
        for e, i in jobs:
            [tx] = by_app[f"php-tls-{i}"]  # one transaction per process, named by its app
            rows = rows_of(tx, "people")
            # Emulated prepares put the value into the text; native ones send it as a bind.
            want = ((f"SELECT name FROM people WHERE id = {i}", "") if e == "1"
                    else ("SELECT name FROM people WHERE id = ?", str(i)))
            got = [(s["text"].replace("'", ""), s.get("attributes", {}).get("binds", "").replace("'", ""))
                   for s in rows if s.get("rows") == 1]
            own += got == [want]
            wrong += [g for g in got if str(i) not in g[0] + g[1]]
        [badtx] = by_app["php-tls-bad"]
        failed = [s for s in badtx["steps"] if s["kind"] == "SQL" and s["error"]]
        print(f"php pdo (mysqlnd) over TLS: {own}/{len(jobs)} processes hold their own row, {len(wrong)} wrong",
              flush=True)
        self.assertEqual(wrong, [])
        self.assertGreaterEqual(own, 0.99 * len(jobs))
        self.assertEqual([s["attributes"]["sqlstate"] for s in failed], ["42S02"], badtx["steps"])


if __name__ == "__main__":
    unittest.main()
