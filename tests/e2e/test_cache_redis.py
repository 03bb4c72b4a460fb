"""REDIS rows from real Redis clients (agent/protocols/redis), against a real redis-server started here on
a free port and on a Unix socket (a temp dir, no persistence, requirepass), with a real collector:
- redis-py (Debian python3-redis) in a threaded http.server, over TCP and over the Unix socket, a second
  client on db 5 (SELECT at connect), a WRONGTYPE error, MULTI/EXEC, and a pipeline of 100 commands per
  request;
- node-redis (tests/e2e/drivers/node_modules/redis) in a Node.js `http` server;
- hiredis-style C clients in process mode: redis-cli (one command per process, 8 processes at a time),
  `redis-cli --pipe` with 100 commands, and redis-benchmark -P 16.
Each front serves a unique key per request to 8 concurrent keep-alive clients. Checked: >= 99% of the
requests hold exactly their own rows (under TXRAY_CACHE_KEYS=raw the key names the request: no row of
another request anywhere; masked, the text is the key pattern `GET item:?`) with the reply's kind and
bytes; an error reply is the row's error; SELECT's db is on the row and on the rows after it; the
password and the values never reach the store; the counts of the C clients are the server's own
(INFO commandstats), and a pipeline's 100 commands are counted exactly, with exact byte totals, past the
step limit."""
import collections
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
import unittest

from txraytest import (AGENT, PYTHON, SOURCE_DIR, TXRAY, Collector, TxrayTestCase, agent_env, bare_env,
                       count_transactions, free_port, get_all, show_json, wait_for, wait_port, wait_transactions)

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
REDIS_BENCHMARK = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"
NODE = "/usr/bin/node"
NODE_REDIS = os.path.join(SOURCE_DIR, "tests", "e2e", "drivers", "node_modules", "redis")
PASSWORD = "s3cret-pw-9f81c2"   # must never appear in the store
VALUE = "val-7d2e"              # the values written: never kept either
REQUESTS = 120                  # per kind of request
CLIENTS = 8
MAX_STEPS = 40                  # a 100-command pipeline folds past it


def have_redis_py():
    return subprocess.run([PYTHON, "-c", "import redis"], capture_output=True).returncode == 0


class RedisServer:
    """A throw-away redis-server: TCP on a free loopback port and a Unix socket, no RDB nor AOF."""

    def __init__(self, folder):
        self.folder = folder
        self.port = free_port()
        self.sock = os.path.join(folder, "redis.sock")
        self.proc = None

    def start(self):
        self.log = open(os.path.join(self.folder, "redis.log"), "wb")
        self.proc = subprocess.Popen([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--unixsocket", self.sock, "--unixsocketperm", "700", "--dir", self.folder,
                                      "--save", "", "--appendonly", "no", "--requirepass", PASSWORD,
                                      "--daemonize", "no", "--databases", "16"],
                                     env=bare_env(), stdout=self.log, stderr=subprocess.STDOUT)
        wait_port(self.port)
        wait_for(lambda: os.path.exists(self.sock), what="redis unix socket")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.log.close()

    def cli(self, *args):
        return subprocess.run([REDIS_CLI, "-p", str(self.port), "-a", PASSWORD, "--no-auth-warning", *args],
                              env=bare_env(), check=True, capture_output=True, text=True, timeout=60).stdout

    def commandstats(self):
        """{command: calls} since the last CONFIG RESETSTAT (the server's own count)."""
        out = {}
        for line in self.cli("INFO", "commandstats").splitlines():
            m = re.match(r"cmdstat_([^:]+):calls=(\d+),", line)
            if m:
                out[m.group(1).upper().replace("|", " ")] = int(m.group(2))
        return out


PY_FRONT = r'''
import http.server, socketserver, sys
import redis

import os
PORT, RPORT, SOCK = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
PW, VALUE = os.environ["REDIS_PASSWORD"], os.environ["CACHE_VALUE"]
tcp = redis.Redis(host="127.0.0.1", port=RPORT, password=PW)
db5 = redis.Redis(host="127.0.0.1", port=RPORT, password=PW, db=5)
unix = redis.Redis(unix_socket_path=SOCK, password=PW)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        kind, rid = self.path.split("/")[1:3]
        if kind in ("kv", "db", "unix"):
            c = {"kv": tcp, "db": db5, "unix": unix}[kind]
            c.set(f"item:{rid}", f"{VALUE}-{rid}")
            body = c.get(f"item:{rid}").decode()
        elif kind == "bad":
            tcp.rpush(f"list:{rid}", VALUE)
            try:
                tcp.get(f"list:{rid}")
                body = "unexpected"
            except redis.ResponseError as e:
                body = str(e).split()[0]
        elif kind == "multi":  # MULTI … EXEC: the commands are QUEUED, EXEC answers them all
            p = tcp.pipeline(transaction=True)
            p.set(f"item:{rid}", f"{VALUE}-{rid}")
            p.get(f"item:{rid}")
            body = p.execute()[1].decode()
        else:  # pipe: 100 commands in one write, answered in order
            p = tcp.pipeline(transaction=False)
            for j in range(50):
                p.set(f"pipe:{rid}:{j}", "x" * j)
                p.get(f"pipe:{rid}:{j}")
            body = str(len(p.execute()))
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

NODE_FRONT = r'''
const http = require("http");
const { createClient } = require(process.argv[4]);
const [port, rport, value, pw] = [+process.argv[2], +process.argv[3], process.env.CACHE_VALUE, process.env.REDIS_PASSWORD];
const client = createClient({ socket: { host: "127.0.0.1", port: rport }, password: pw });
client.on("error", (e) => console.error("redis", e));
client.connect().then(() => {
  http.createServer(async (req, res) => {
    const [, kind, rid] = req.url.split("/");
    let body;
    if (kind === "kv") {
      await client.set(`item:${rid}`, `${value}-${rid}`);
      body = await client.get(`item:${rid}`);
    } else {
      await client.rPush(`list:${rid}`, value);
      try {
        await client.get(`list:${rid}`);
        body = "unexpected";
      } catch (e) {
        body = String(e.message).split(" ")[0];
      }
    }
    res.writeHead(200, { "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  }).listen(port, "127.0.0.1");
});
'''


def resp(*args):
    """The RESP bytes a client writes for one command."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def redis_rows(tx):
    return [s for s in tx["steps"] if s["kind"] == "REDIS"]


def redis_counts(tx):
    """text -> (count, bytes written, bytes read) over the REDIS rows and summary lines."""
    c = collections.defaultdict(lambda: [0, 0, 0])
    for s in redis_rows(tx):
        e = c[s["text"]]
        e[0] += 1
        e[1] += s["bytes_written"]
        e[2] += s["bytes_read"]
    for s in tx.get("summary") or []:
        if s["kind"] == "REDIS":
            e = c[s["text"]]
            e[0] += s["count"]
            e[1] += s["bytes_written"]
            e[2] += s["bytes_read"]
    return {k: tuple(v) for k, v in c.items()}


def store_bytes(db):
    """Every byte of the store (the database file and its WAL), to look for what must never be kept."""
    out = b""
    for f in (db, db + "-wal"):
        if os.path.exists(f):
            with open(f, "rb") as fh:
                out += fh.read()
    return out


def store_texts(db):
    """Every text and attribute the store holds (decoded), for the same search."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT text FROM texts").fetchall()
        rows += con.execute("SELECT coalesce(attributes, '') || coalesce(error, '') FROM steps").fetchall()
    finally:
        con.close()
    return "\n".join(r[0] or "" for r in rows)


@unittest.skipUnless(os.path.exists(AGENT) and os.path.exists(REDIS_SERVER), "needs the agent and redis-server")
class CacheRedis(TxrayTestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls._dir = tempfile.TemporaryDirectory(prefix="txray-redis-")
        cls.server = RedisServer(cls._dir.name).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls._dir.cleanup()

    # --- fronts under `txray run` ---------------------------------------------------------------------

    def serve(self, app, cmd, kinds, raw):
        """The front under `txray run`, driven with REQUESTS unique ids per kind over CLIENTS keep-alive
        connections; returns ({path: tx}, the collector's db, [(kind, id)])."""
        # the password and the value from the environment: a process's command line is kept with its
        # transactions, and neither may reach the store
        env = bare_env({"TXRAY_CACHE_KEYS": "raw" if raw else "mask", "TXRAY_MAX_STEPS": str(MAX_STEPS),
                        "REDIS_PASSWORD": PASSWORD, "CACHE_VALUE": VALUE})
        env.pop("NODE_OPTIONS", None)
        port = free_port()
        reqs = [(k, 1000 * (n + 1) + j) for j in range(REQUESTS) for n, k in enumerate(kinds)]
        paths = [f"/{k}/{i}" for k, i in reqs]
        sub = {"{port}": str(port), "{rport}": str(self.server.port), "{sock}": self.server.sock}
        col = Collector(self.tmp, db=os.path.join(self.tmp, f"{app}.db"),
                        endpoint=f"ipc://{self.tmp}/{app}.sock").start()
        try:
            log = open(os.path.join(self.tmp, f"{app}.log"), "wb")
            p = self.spawn([TXRAY, "run", "--collector", col.endpoint, "--app", app, "--",
                            *[sub.get(a, a) for a in cmd]], env=env, stdout=log, stderr=subprocess.STDOUT)
            wait_port(port, 60)
            answers, errors = get_all(port, paths, CLIENTS)
            self.assertEqual(errors, [])
            for k, i in reqs:
                want = {"bad": "WRONGTYPE", "pipe": "100"}.get(k, f"{VALUE}-{i}")
                self.assertEqual(answers.get(f"/{k}/{i}"), (200, want), f"/{k}/{i}")
            wait_for(lambda: count_transactions(col.db, app, "GET /%") >= len(paths), 60,
                     what=f"{len(paths)} transactions of {app}")
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
            log.close()
            time.sleep(1.5)  # the last batch, with the unattributed container
            txs = show_json(col.db, "--app", app, "--last", str(10 * len(paths)))
        finally:
            col.stop()
        by_path = {t["name"].split(" ", 1)[1]: t for t in txs if t.get("kind") != "unattributed"
                   and t["name"].startswith("GET /")}
        self.assertEqual(len(by_path), len(paths))
        return by_path, col.db, reqs, [t for t in txs if t.get("kind") == "unattributed"]

    def expected(self, kind, i, raw):
        """The rows (text, reply kind) a request of this kind makes, in order."""
        key = (lambda pat, real: real) if raw else (lambda pat, real: pat)
        if kind in ("kv", "db", "unix"):
            return [(f"SET {key('item:?', f'item:{i}')}", "+"), (f"GET {key('item:?', f'item:{i}')}", "$")]
        if kind == "multi":
            return [("MULTI", "+"), (f"SET {key('item:?', f'item:{i}')}", "+"), (f"GET {key('item:?', f'item:{i}')}", "+"),
                    ("EXEC", "*")]
        if kind == "bad":
            return [(f"RPUSH {key('list:?', f'list:{i}')}", ":"), (f"GET {key('list:?', f'list:{i}')}", "-")]
        return None

    def check(self, name, by_path, reqs, raw, share=0.99):
        """>= 99% of the requests hold exactly their own rows; none holds a row of another request."""
        exact, wrong, missing = 0, [], []
        for k, i in reqs:
            tx = by_path[f"/{k}/{i}"]
            # a request that made a pool's new connection holds its set-up too (AUTH, SELECT): checked below
            rows = [s for s in redis_rows(tx) if s["text"] not in ("AUTH", "SELECT")]
            if raw:
                for s in rows:
                    ids = {int(x) for x in re.findall(r":(\d+)", s["text"])[:1]}
                    if ids and ids != {i}:
                        wrong.append((k, i, s["text"]))
            if k == "pipe":
                ok = self.check_pipeline(tx, i, raw)
            else:
                want = self.expected(k, i, raw)
                # every row a request holds is one of its own commands, with its reply, whatever is missing
                wrong += [(k, i, s["text"]) for s in rows if (s["text"], s.get("attributes", {}).get("reply")) not in want]
                got = [(s["text"], s.get("attributes", {}).get("reply")) for s in rows]
                ok = got == want and all(s["bytes_read"] > 0 and s["bytes_written"] > 0 for s in rows)
                if ok and k == "bad":
                    ok = rows[1]["error"].startswith("WRONGTYPE Operation against a key holding the wrong kind")
                if ok and k == "multi":
                    ok = [s.get("attributes", {}).get("status") for s in rows] == ["OK", "QUEUED", "QUEUED", None] and \
                        rows[3].get("attributes", {}).get("elements") == "2"
                if ok and k == "db":
                    ok = all(s.get("attributes", {}).get("db") == "5" for s in rows)
                if ok and k != "multi":
                    first = resp("RPUSH", f"list:{i}", VALUE) if k == "bad" else resp("SET", f"item:{i}", f"{VALUE}-{i}")
                    ok = rows[0]["bytes_written"] == len(first)
                if ok and k not in ("bad", "multi"):
                    ok = rows[1]["bytes_read"] == len(b"$%d\r\n%s-%d\r\n" % (len(f"{VALUE}-{i}"), VALUE.encode(), i))
                    ok = ok and rows[0]["bytes_read"] == len(b"+OK\r\n")
                ok = ok and tx["call_count"] >= len(rows)
            exact += ok
            if not ok and len(missing) < 3:
                missing.append((k, i, [(s["kind"], s["text"], s.get("attributes"), s["error"][:40])
                                       for s in tx["steps"] if s["kind"] not in ("START", "END")],
                                tx.get("summary")))
        line = f"{name}: {exact}/{len(reqs)} requests hold exactly their own rows; {len(wrong)} rows of another request"
        print(line, flush=True)
        if missing:
            print(f"  e.g. {missing[:2]}", flush=True)
        self.assertEqual(wrong, [], line)
        self.assertGreaterEqual(exact, share * len(reqs), f"{line}; e.g. {missing}")

    def check_pipeline(self, tx, i, raw):
        """100 commands counted, with exact written and read totals, rows and summary lines together."""
        c = redis_counts(tx)
        setup = c.pop("AUTH", (0, 0, 0))[0]  # the request that made the pool's connection
        if raw:
            counts = collections.Counter()
            for text, v in c.items():
                counts[text.split()[0]] += v[0]
            return counts == {"SET": 50, "GET": 50}
        written = sum(len(resp("SET", f"pipe:{i}:{j}", "x" * j)) + len(resp("GET", f"pipe:{i}:{j}")) for j in range(50))
        read = sum(len(b"+OK\r\n") + len(b"$%d\r\n%s\r\n" % (j, b"x" * j)) for j in range(50))
        total = tuple(sum(v[n] for v in c.values()) for n in range(3))
        return set(c) == {"SET pipe:?:?", "GET pipe:?:?"} and c["SET pipe:?:?"][0] == 50 and \
            c["GET pipe:?:?"][0] == 50 and total == (100, written, read) and tx["call_count"] == 100 + setup and \
            bool(tx.get("summary"))

    def check_secrets(self, db):
        blob = store_bytes(db)
        texts = store_texts(db)
        for secret in (PASSWORD, VALUE):
            self.assertFalse(secret.encode() in blob, f"{secret} in the store's bytes")
            self.assertFalse(secret in texts, f"{secret} in the store's texts")

    @unittest.skipUnless(have_redis_py(), "needs python3-redis")
    def test_redis_py(self):
        cmd = [PYTHON, "-c", PY_FRONT, "{port}", "{rport}", "{sock}"]
        kinds = ["kv", "db", "unix", "bad", "multi", "pipe"]
        for raw in (True, False):
            by_path, db, reqs, unattributed = self.serve(f"redis-py-{'raw' if raw else 'mask'}", cmd, kinds, raw)
            self.check(f"redis-py ({'raw' if raw else 'mask'})", by_path, reqs, raw)
            self.check_secrets(db)
            # The connections' set-up (AUTH, SELECT 5) happens in whichever request made the connection, or
            # outside any; AUTH's row never carries its argument; SELECT's row has its db.
            every = [s for t in list(by_path.values()) + unattributed for s in redis_rows(t)]
            auth = [s for s in every if s["text"].startswith("AUTH")]
            select = [s for s in every if s["text"].startswith("SELECT")]
            self.assertTrue(auth and all(s["text"] == "AUTH" and s["error"] == "" for s in auth), auth[:3])
            self.assertTrue(select and all(s.get("attributes", {}).get("db") == "5" for s in select), select[:3])
            if not raw:
                fps = {s["text"]: s.get("fingerprint") for s in every if s["text"].startswith(("GET item", "SET item"))}
                self.assertEqual(set(fps), {"GET item:?", "SET item:?"})

    @unittest.skipUnless(os.path.exists(NODE) and os.path.isdir(NODE_REDIS), "needs node and node-redis")
    def test_node_redis(self):
        cmd = [NODE, "-e", NODE_FRONT, "x", "{port}", "{rport}", NODE_REDIS]
        # node-redis queues the commands of every caller and writes them all in one corked write from a
        # setImmediate: the Node shim lists each command's owner in the hint board's owner list, and the
        # agent's Redis client takes one per command (with one owner per write, 25-60 of 240 held theirs).
        for raw in (True, False):
            by_path, db, reqs, _ = self.serve(f"node-redis-{'raw' if raw else 'mask'}", cmd, ["kv", "bad"], raw)
            self.check(f"node-redis ({'raw' if raw else 'mask'})", by_path, reqs, raw)
            self.check_secrets(db)

    # --- C clients in process mode --------------------------------------------------------------------

    def process_run(self, col, app, args, stdin=None):
        env = agent_env(col.endpoint, app=app, mode="process",
                        extra={"TXRAY_MAX_STEPS": str(MAX_STEPS), "REDISCLI_AUTH": PASSWORD})
        return subprocess.run(args, env=env, input=stdin, capture_output=True, timeout=120, check=True)

    def only_tx(self, db, app):
        txs = [t for t in show_json(db, "--app", app, "--last", "5") if t.get("kind") != "unattributed"]
        self.assertEqual(len(txs), 1, [t["name"] for t in txs])
        return txs[0]

    def test_redis_cli_processes(self):
        """8 redis-cli processes at a time, each one INCR of its own key: each process's transaction holds
        AUTH and its INCR, which the server answered."""
        n = 48
        with Collector(self.tmp) as col:
            # The password from the environment: a process transaction keeps its command line.
            env = agent_env(col.endpoint, app="redis-cli", mode="process",
                            extra={"TXRAY_CACHE_KEYS": "raw", "REDISCLI_AUTH": PASSWORD})
            for k in range(0, n, CLIENTS):
                procs = [(i, subprocess.Popen([REDIS_CLI, "-p", str(self.server.port), "INCRBY", f"cli:{i}", str(i)],
                                              env=env, stdout=subprocess.PIPE, text=True)) for i in range(k, k + CLIENTS)]
                for i, p in procs:
                    out, _ = p.communicate(timeout=60)
                    self.assertEqual(out.strip(), str(i))
            wait_for(lambda: count_transactions(col.db, "redis-cli") >= n, 60, what="redis-cli transactions")
            txs = [t for t in show_json(col.db, "--app", "redis-cli", "--last", str(4 * n))
                   if t.get("kind") != "unattributed"]
            self.check_secrets(col.db)
        own = 0
        seen = set()
        for t in txs:
            rows = redis_rows(t)
            texts = [s["text"] for s in rows]
            m = [re.fullmatch(r"INCRBY cli:(\d+)", x) for x in texts]
            ids = [int(x.group(1)) for x in m if x]
            if texts[:1] == ["AUTH"] and len(ids) == 1 and rows[-1].get("attributes", {}).get("reply") == ":":
                own += 1
                seen.add(ids[0])
        print(f"redis-cli: {own}/{n} processes hold AUTH and their own INCRBY", flush=True)
        self.assertEqual(len(txs), n)
        self.assertEqual(own, n)
        self.assertEqual(seen, set(range(n)))

    def test_redis_cli_pipe_100(self):
        """redis-cli --pipe with 100 SETs (and the ECHO it adds to know the last reply): 100 counted, the
        bytes of the file exactly, past the step limit."""
        cmds = b"".join(resp("SET", f"bulk:{j}", "y" * (j % 7)) for j in range(100))
        self.server.cli("CONFIG", "RESETSTAT")
        with Collector(self.tmp) as col:
            r = self.process_run(col, "redis-pipe", [REDIS_CLI, "-p", str(self.server.port), "--pipe"], stdin=cmds)
            self.assertIn(b"errors: 0, replies: 100", r.stdout)
            wait_transactions(col.db, 1)
            tx = self.only_tx(col.db, "redis-pipe")
        stats = self.server.commandstats()
        c = redis_counts(tx)
        print(f"redis-cli --pipe: {c}", flush=True)
        self.assertEqual(stats.get("SET"), 100)
        self.assertEqual(c["SET bulk:?"], (100, len(cmds), 500))
        # the ECHO that tells redis-cli the last reply came (20 random bytes); the "\r\n" before it is no command's
        self.assertEqual(c["ECHO"], (1, len(resp("ECHO", "x" * 20)), len(b"$20\r\n" + b"x" * 20 + b"\r\n")))
        self.check_secrets(col.db)
        self.assertTrue(tx["summary"])
        self.assertEqual(sum(v[0] for v in c.values()), tx["call_count"])

    def test_redis_benchmark(self):
        """redis-benchmark -P 16 -t set,get: the agent's count of every command is the server's own."""
        n = 4000
        self.server.cli("CONFIG", "RESETSTAT")
        with Collector(self.tmp) as col:
            self.process_run(col, "redis-benchmark", [REDIS_BENCHMARK, "-p", str(self.server.port), "-a", PASSWORD,
                                                      "-c", str(CLIENTS), "-n", str(n), "-P", "16", "-r", "100000",
                                                      "-t", "set,get",
                                                      "-q"])
            wait_transactions(col.db, 1)
            tx = self.only_tx(col.db, "redis-benchmark")
        stats = self.server.commandstats()
        stats.pop("INFO", None)
        stats.pop("CONFIG RESETSTAT", None)
        stats["AUTH"] -= 1  # the AUTH of the redis-cli that asked for the stats
        c = redis_counts(tx)
        by_command = collections.Counter()
        for text, (count, _, _) in c.items():
            by_command[text.split(" key:")[0]] += count
        print(f"redis-benchmark: agent {dict(by_command)}, server {stats}", flush=True)
        self.assertEqual(by_command["SET"], n)
        self.assertEqual(by_command["GET"], n)
        self.assertEqual(dict(by_command), stats)
        # every GET/SET row of the benchmark's keys with its exact bytes: SET key:<12 digits> xxx (3 bytes)
        self.assertEqual(c["SET key:?"][1], n * len(resp("SET", "key:000000000000", "xxx")))
        self.assertEqual(c["GET key:?"][1], n * len(resp("GET", "key:000000000000")))
        self.assertEqual(tx["call_count"], sum(by_command.values()))


if __name__ == "__main__":
    unittest.main()
