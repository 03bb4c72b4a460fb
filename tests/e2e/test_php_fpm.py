"""php-fpm behind nginx, as people run it: Debian's php8.2-fpm in the foreground with a pool of its own,
nginx's fastcgi_pass over a Unix socket and over TCP, both under the agent, a traced back-end (attr/back.py)
and a PostgreSQL server.

Each request `GET /r/<i>` runs index.php, which makes one PDO pgsql statement (libpq) whose text names
the request (`req_<i>`), one curl call (libcurl) and one `file_get_contents` (PHP streams: plain sockets)
to the back-end, whose paths name it too. Under 8 concurrent keep-alive clients, per case:
- every answer is right (the agent changes nothing the programs see);
- nginx: one transaction per request, whose one HTTP_CALL row (protocol=fastcgi) is linked to the PHP
  transaction of the same request (same trace id, the callee's parent span = the row's span id) — at
  least 99% of them, and none linked to another request's;
- php-fpm: exactly one transaction per request (`GET /r/<i>`, protocol=fastcgi) holding its own SQL row
  and its own two HTTP_CALL rows, each linked to a back-end transaction of the same trace;
- pm = static, dynamic, ondemand (two rounds with a pause longer than pm.process_idle_timeout between
  them: the first round's workers are killed idle, the second round is served by workers forked for it),
  and static with pm.max_requests (workers recycled after 7 requests: ~35 generations of workers, each
  exiting through exit() after its last request).
Every PHP transaction must be in the store while php-fpm still runs: its master follows the SIGQUIT of a
stop with SIGTERM to the children at once (process_control_timeout = 0, the default), so nothing a worker
still held at the stop would survive it — a worker forked just before a burst ends its first
transactions before the agent thread is started for it (transport.h: before_wait).

A second page, cache.php (`GET /c/<i>`), is what a PHP cache-aside lookup does: phpredis (php8.2-redis,
its own RESP code) SET and GET of the key `req:<i>` on a persistent connection (`pconnect`: made in a
worker's first request, reused by its later ones) against a real redis-server, and a PDO mysql (mysqlnd,
native prepare) statement `SELECT ? AS req_<i>` against a real MariaDB server: >= 99% of the requests hold
their own two REDIS rows (TXRAY_CACHE_KEYS=raw: the key names the request) and their own SQL row, and no
transaction holds a row of another request.
"""
import collections
import json
import os
import shutil
import signal
import subprocess
import unittest

import mariadbserver
import nginxconf
import pgserver
from attribution import ATTR
from txraytest import (PYTHON, Collector, TxrayTestCase, get_all, agent_env, bare_env, count_transactions,
                       free_port, show_json, wait_for, wait_port)

NGINX = "/usr/sbin/nginx"
PHP_FPM = "/usr/sbin/php-fpm8.2"
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
PHP_REDIS_INI = "/etc/php/8.2/fpm/conf.d/20-redis.ini"
PHP_PDO_MYSQL_INI = "/etc/php/8.2/fpm/conf.d/20-pdo_mysql.ini"
REQUESTS = 240
CONNECTIONS = 8

# inside nginx's http block (nginxconf.py has the rest)
NGINX_HTTP = """\
  sendfile on;
  server {{
    listen 127.0.0.1:{port};
    root {dir}/www;
    location /r/ {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {dir}/www/index.php;
      fastcgi_param SCRIPT_NAME /index.php;
      fastcgi_pass {upstream};
    }}
    location /c/ {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {dir}/www/cache.php;
      fastcgi_param SCRIPT_NAME /cache.php;
      fastcgi_pass {upstream};
    }}
    location /p/ {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {dir}/www/upload.php;
      fastcgi_param SCRIPT_NAME /upload.php;
      fastcgi_pass {upstream};
    }}
  }}
"""

FPM_CONF = """\
[global]
error_log = {dir}/fpm.log
daemonize = no
[www]
listen = {listen}
listen.mode = 0666
{pm}
clear_env = no
catch_workers_output = yes
"""

PHP = """\
<?php
$i = basename($_SERVER['REQUEST_URI']);
$pdo = new PDO('pgsql:host=127.0.0.1;port={pg_port};dbname=postgres', 'postgres');
$v = $pdo->query("SELECT 1 AS req_" . intval($i))->fetchColumn();
$c = curl_init('http://127.0.0.1:{back}/b/' . $i);
curl_setopt($c, CURLOPT_RETURNTRANSFER, true);
$a = curl_exec($c);
curl_close($c);
$b = file_get_contents('http://127.0.0.1:{back}/b/s' . $i);
header('Content-Type: text/plain');
echo "php $i $v $a $b";
"""

CACHE_PHP = """\
<?php
$i = intval(basename($_SERVER['REQUEST_URI']));
$r = new Redis();
$r->pconnect('127.0.0.1', {redis_port});
$r->set("req:$i", "val$i");
$g = $r->get("req:$i");
$pdo = new PDO('mysql:host=127.0.0.1;port={my_port};dbname=txray', 'root', '',
               [PDO::ATTR_EMULATE_PREPARES => false, PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
$st = $pdo->prepare("SELECT ? AS req_$i");
$st->execute([$i]);
$v = $st->fetchColumn();
header('Content-Type: text/plain');
echo "cache $i $g $v";
"""

PM = {
    "static": "pm = static\npm.max_children = 4",
    "dynamic": "pm = dynamic\npm.max_children = 6\npm.start_servers = 2\npm.min_spare_servers = 1\n"
               "pm.max_spare_servers = 3",
    # the master kills at most one idle worker per second (its maintenance heartbeat): 3 workers, 1 s idle
    "ondemand": "pm = ondemand\npm.max_children = 3\npm.process_idle_timeout = 1s",
    "recycled": "pm = static\npm.max_children = 3\npm.max_requests = 7",
}


UPLOAD_PHP = "<?php echo 'post ' . basename($_SERVER['REQUEST_URI']) . ' ' . strlen(file_get_contents('php://input'));\n"


def drive(port, ids, prefix="/r/", connections=CONNECTIONS):
    """GET <prefix><i> for every i over `connections` keep-alive clients at once; {i: (status, body)}."""
    out, errors = get_all(port, [f"{prefix}{i}" for i in ids], connections)
    if errors:
        raise AssertionError(f"client errors: {errors[:3]}")
    return {int(p.rsplit("/", 1)[1]): answer for p, answer in out.items()}


def fpm_workers(log_path):
    """(pids started, pids exited) from php-fpm's log (the master's NOTICE lines; exits at a stop are
    logged at level debug only, so these are the workers that exited while php-fpm ran)."""
    import re
    started, exited = set(), set()
    with open(log_path, errors="replace") as f:
        for line in f:
            if m := re.search(r"child (\d+) started", line):
                started.add(int(m.group(1)))
            elif m := re.search(r"child (\d+) exited", line):
                exited.add(int(m.group(1)))
    return started, exited


def children(pid):
    """The pids of the processes whose parent is pid (php-fpm's workers: the master logs the exits of
    workers it killed idle only at log level debug)."""
    out = set()
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/stat") as f:
                    # pid (comm) state ppid …: comm may hold spaces, so split after its ')'
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.add(int(e))
            except (OSError, ValueError, IndexError):
                pass
    return out


def php_pids(db, prefix):
    """{request id: pid of the php-fpm worker whose transaction it is}."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        rows = con.execute("SELECT t.name, a.pid FROM transactions t JOIN agents a ON a.id = t.agent_id "
                           "WHERE t.app = 'php' AND t.name LIKE ?", (f"GET {prefix}%",)).fetchall()
    finally:
        con.close()
    return {int(name.rsplit("/", 1)[1]): pid for name, pid in rows}


class RedisServer:
    """A throw-away redis-server on a free loopback port (no persistence), not traced."""

    def __init__(self, folder):
        self.folder, self.port, self.proc = folder, free_port(), None

    def __enter__(self):
        self.log = open(os.path.join(self.folder, "redis.log"), "wb")
        self.proc = subprocess.Popen([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
                                      self.folder, "--save", "", "--appendonly", "no", "--daemonize", "no"],
                                     env=bare_env(), stdout=self.log, stderr=subprocess.STDOUT)
        wait_port(self.port)
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()  # the server this object started, by its pid
            self.proc.wait(timeout=20)
        self.log.close()


def attr(t, key):
    return (t.get("attributes") or {}).get(key)


@unittest.skipUnless(os.access(PHP_FPM, os.X_OK) and os.access(NGINX, os.X_OK) and pgserver.available(),
                     "php8.2-fpm, nginx and postgresql-15 are needed (scripts/install-deps.sh --test)")
class PhpFpm(TxrayTestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg = pgserver.PgServer()
        cls.pg.start()

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def run_case(self, pm, unix, rounds=1, page="index", servers=None, php_extra=None, posts=False):
        """nginx + php-fpm (+ the back-end) under the agent; `rounds` rounds of REQUESTS requests to `page`,
        each round after the workers of the one before were all gone (ondemand's idle kill). Returns
        (db, {round: request ids})."""
        d = self.tmp
        os.makedirs(os.path.join(d, "www"), exist_ok=True)
        port = free_port()
        listen = os.path.join(d, "php.sock") if unix else f"127.0.0.1:{free_port()}"
        upstream = f"unix:{listen}" if unix else listen
        prefix = "/r/" if page == "index" else "/c/"
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(nginxconf.conf(d, NGINX_HTTP.format(dir=d, port=port, upstream=upstream)))
        with open(os.path.join(d, "fpm.conf"), "w") as f:
            f.write(FPM_CONF.format(dir=d, listen=listen, pm=PM[pm]))
        ids = {}
        with Collector(d) as col:
            back = free_port()
            bproc = self.spawn([PYTHON, os.path.join(ATTR, "back.py"), str(back)],
                               env=agent_env(col.endpoint, app="back"), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            wait_port(back)
            with open(os.path.join(d, "www", "index.php"), "w") as f:
                f.write(PHP.replace("{pg_port}", str(self.pg.port)).replace("{back}", str(back)))
            with open(os.path.join(d, "www", "upload.php"), "w") as f:
                f.write(UPLOAD_PHP)
            if servers:
                with open(os.path.join(d, "www", "cache.php"), "w") as f:
                    f.write(CACHE_PHP.replace("{redis_port}", str(servers["redis"])).replace(
                        "{my_port}", str(servers["mysql"])))
            flog = open(os.path.join(d, "fpm.out"), "wb")
            fpm = self.spawn([PHP_FPM, "-F", "-R", "-y", os.path.join(d, "fpm.conf")],
                             env=agent_env(col.endpoint, app="php", extra=php_extra), stdout=flog,
                             stderr=subprocess.STDOUT)
            if unix:
                wait_for(lambda: os.path.exists(listen), what="php-fpm's socket")
            else:
                wait_port(int(listen.rsplit(":", 1)[1]))
            nginx = self.spawn([NGINX, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e",
                                os.path.join(d, "nginx-error.log")],
                               env=agent_env(col.endpoint, app="nginx"), stdout=subprocess.DEVNULL)
            wait_port(port)
            for k in range(rounds):
                if k:
                    # ondemand: every worker of the round before is killed once idle for process_idle_timeout
                    wait_for(lambda: not children(fpm.pid), 30, interval=0.2, what="php-fpm's idle workers killed")
                ids[k] = range(k * REQUESTS, (k + 1) * REQUESTS)
                answers = drive(port, ids[k], prefix)
                want = "php {0} 1 b {0} b s{0}" if page == "index" else "cache {0} val{0} {0}"
                wrong = {i: a for i, a in answers.items() if a != (200, want.format(i))}
                with open(os.path.join(d, "fpm.out"), errors="replace") as f:
                    self.assertEqual(wrong, {}, f.read()[-2000:])
                self.assertEqual(len(answers), REQUESTS)
                # Every PHP transaction leaves its worker while the worker lives (see the module's text).
                total = (k + 1) * REQUESTS
                wait_for(lambda: count_transactions(col.db, "php", f"GET {prefix}%") >= total, 30,
                         what=f"the {total} PHP transactions while php-fpm runs")
            if posts:
                nginxconf.post_all(self, port)
                wait_for(lambda: count_transactions(col.db, "php", "POST /p/%") >= nginxconf.POSTS, 30,
                         what=f"the {nginxconf.POSTS} PHP POST transactions while php-fpm runs")
            # graceful stops: nginx's workers exit and their agents send what they hold
            nginx.send_signal(signal.SIGQUIT)
            self.assertEqual(nginx.wait(timeout=30), 0)
            fpm.send_signal(signal.SIGQUIT)
            fpm.wait(timeout=30)
            flog.close()
            # nginx and PHP: one per request each; the back-end: two per request of index.php
            n = rounds * REQUESTS
            wait_for(lambda: count_transactions(col.db) >= (4 if page == "index" else 2) * n + (2 * nginxconf.POSTS if posts else 0),
                     30, what="every transaction")
            bproc.send_signal(signal.SIGTERM)
            bproc.wait(timeout=10)
        return col.db, ids

    def check_posts(self, db):
        """POST /p/<i>: the body's exact size on both sides (STDIN content), the rows linked, none given up."""
        txs = [t for t in show_json(db, "--last", "100000") if t.get("name", "").startswith("POST /p/")]
        nginx = [t for t in txs if t["app"] == "nginx"]
        php = {t["txid"]: t for t in txs if t["app"] == "php"}
        self.assertEqual(sorted(t["name"] for t in nginx), sorted(f"POST /p/{i}" for i in range(nginxconf.POSTS)))
        self.assertEqual(sorted(t["name"] for t in php.values()), sorted(f"POST /p/{i}" for i in range(nginxconf.POSTS)))
        for t in nginx:
            size = len(nginxconf.post_body(int(t["name"].rsplit("/", 1)[1])))
            calls = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"]
            self.assertEqual(len(calls), 1, calls)
            call = calls[0]
            self.assertEqual(attr(call, "method"), "POST", call)
            self.assertFalse(call.get("error"), call)
            self.assertEqual(call.get("status"), 200, call)
            self.assertEqual(call["bytes_written"], size, call)
            callee = php.get(call.get("callee_txid"))
            self.assertIsNotNone(callee, call)
            self.assertEqual(callee["name"], t["name"])
            self.assertEqual(callee["bytes_read"], size)

    def transactions(self, db, n, prefix):
        txs = [t for t in show_json(db, "--last", str(20 * n)) if t.get("kind") != "unattributed"]
        php = [t for t in txs if t["app"] == "php" and t["name"].startswith("GET " + prefix)]
        nginx = [t for t in txs if t["app"] == "nginx" and t["name"].startswith("GET " + prefix)]
        back = [t for t in txs if t["app"] == "back"]
        return php, nginx, back

    def check(self, db, n, pm, unix, prefix="/r/"):
        php, nginx, back = self.transactions(db, n, prefix)
        # exact counts: one transaction per request on each side, none twice
        self.assertEqual(sorted(t["name"] for t in php), sorted(f"GET {prefix}{i}" for i in range(n)))
        self.assertEqual(sorted(t["name"] for t in nginx), sorted(f"GET {prefix}{i}" for i in range(n)))
        if prefix == "/r/":
            self.assertEqual(len(back), 2 * n)
        php_by_txid = {t["txid"]: t for t in php}
        back_by_txid = {t["txid"]: t for t in back}

        # nginx's call rows, linked to the PHP transaction of the same request
        linked = wrong = 0
        for t in nginx:
            rid = t["name"].rsplit("/", 1)[1]
            calls = [s for s in t["steps"] if s["kind"] == "HTTP_CALL"]
            self.assertEqual(len(calls), 1, f"{t['name']}: {calls}")
            call = calls[0]
            self.assertEqual(attr(call, "protocol"), "fastcgi", call)
            self.assertTrue(call["url"].startswith("fastcgi://"), call["url"])
            self.assertTrue(call["url"].endswith(f"{prefix}{rid}"), call["url"])
            self.assertEqual(call.get("status"), 200, call)
            callee = php_by_txid.get(call.get("callee_txid"))
            if callee is None:
                continue
            if callee["name"] != t["name"]:
                wrong += 1
                continue
            self.assertEqual(callee["trace_id"], t["trace_id"])
            self.assertEqual(callee["parent_span_id"], call["span_id"])
            linked += 1
        line = (f"pm={pm} {'unix' if unix else 'tcp'}: {n} requests over {CONNECTIONS} connections: "
                f"nginx call rows linked to their PHP transaction {linked} ({100.0 * linked / n:.2f}%), "
                f"wrong {wrong}")
        print(line, flush=True)
        self.assertEqual(wrong, 0, line)
        self.assertGreaterEqual(linked, 0.99 * n, line)
        for t in php:
            self.assertEqual(attr(t, "protocol"), "fastcgi", t)
            self.assertEqual(t["status"], 200)
        if prefix != "/r/":
            return php

        # the PHP transactions: their own SQL row and outbound calls, the calls linked to the back-end
        for t in php:
            rid = t["name"].rsplit("/", 1)[1]
            sql = [s for s in t["steps"] if s["kind"] == "SQL"]
            # PDO prepares server-side: PREPARE … AS SELECT ? AS req_<i>, then the statement itself
            named = {s["text"].split("req_", 1)[1].split()[0] for s in sql if "req_" in s["text"]}
            self.assertEqual(named, {rid}, f"{t['name']}: {sql}")
            calls = sorted(s["url"].rsplit("/", 1)[1] for s in t["steps"] if s["kind"] == "HTTP_CALL")
            self.assertEqual(calls, sorted([rid, "s" + rid]), t["name"])
            for s in t["steps"]:
                if s["kind"] != "HTTP_CALL":
                    continue
                callee = back_by_txid.get(s.get("callee_txid"))
                self.assertIsNotNone(callee, f"{t['name']}: call {s['url']} not linked")
                self.assertEqual(callee["trace_id"], t["trace_id"], "the back-end sees the PHP trace")
                self.assertEqual(callee["name"], "GET /b/" + s["url"].rsplit("/", 1)[1])
        return php

    def test_static_unix_socket(self):
        db, _ = self.run_case("static", unix=True, posts=True)
        self.check(db, REQUESTS, "static", True)
        self.check_posts(db)

    def test_dynamic_tcp(self):
        db, _ = self.run_case("dynamic", unix=False, posts=True)
        self.check(db, REQUESTS, "dynamic", False)
        self.check_posts(db)

    def test_ondemand_unix_socket(self):
        db, ids = self.run_case("ondemand", unix=True, rounds=2)
        self.check(db, 2 * REQUESTS, "ondemand", True)
        # workers forked on demand for each round: the second round's are new processes (the first round's
        # were killed idle), never more than pm.max_children of them
        pids = php_pids(db, "/r/")
        first, second = {pids[i] for i in ids[0]}, {pids[i] for i in ids[1]}
        self.assertEqual(first & second, set(), "the first round's workers were killed idle")
        self.assertLessEqual(len(first), 3)
        self.assertLessEqual(len(second), 3)
        print(f"pm=ondemand: {len(first)} workers in the first round, {len(second)} new ones in the second",
              flush=True)

    def test_max_requests_recycling_tcp(self):
        db, _ = self.run_case("recycled", unix=False)
        self.check(db, REQUESTS, "recycled", False)
        # Every worker the master saw exit while serving (the log's NOTICE lines: recycled after its 7th
        # request) has its 7 transactions in the store, its last ones too; the 3 still running at the
        # stop served the rest, so at least (240 - 3 * 7) / 7 workers were recycled.
        per_pid = collections.Counter(php_pids(db, "/r/").values())
        _, exited = fpm_workers(os.path.join(self.tmp, "fpm.log"))
        self.assertEqual({p: per_pid[p] for p in exited}, {p: 7 for p in exited})
        self.assertGreaterEqual(len(exited), -(-(REQUESTS - 3 * 7) // 7), per_pid)
        self.assertTrue(all(c <= 7 for c in per_pid.values()), per_pid)
        print(f"pm.max_requests=7: {len(per_pid)} workers served the {REQUESTS} requests, "
              f"{len(exited)} of them recycled after their 7th", flush=True)

    @unittest.skipUnless(os.access(REDIS_SERVER, os.X_OK) and os.path.exists(PHP_REDIS_INI) and
                         os.path.exists(PHP_PDO_MYSQL_INI) and mariadbserver.available(),
                         "redis-server, php8.2-redis, php8.2-mysql and mariadb-server are needed")
    def test_phpredis_and_mysqlnd_static_unix_socket(self):
        with RedisServer(self.tmp) as redis, mariadbserver.MariaDbServer() as my:
            db, _ = self.run_case("static", unix=True, page="cache",
                                  servers={"redis": redis.port, "mysql": my.port},
                                  php_extra={"TXRAY_CACHE_KEYS": "raw"})
        php = self.check(db, REQUESTS, "static", True, prefix="/c/")
        own_redis = own_sql = 0
        wrong = []
        for t in php:
            rid = t["name"].rsplit("/", 1)[1]
            redis_rows = [s for s in t["steps"] if s["kind"] == "REDIS"]
            keys = {s["text"].split(" ", 1)[1] for s in redis_rows if " req:" in s["text"]}
            sql_ids = {s["text"].split("req_", 1)[1].split()[0] for s in t["steps"]
                       if s["kind"] == "SQL" and "req_" in s["text"]}
            wrong += [(t["name"], k) for k in keys if k != f"req:{rid}"]
            wrong += [(t["name"], f"req_{k}") for k in sql_ids if k != rid]
            if sorted(s["text"] for s in redis_rows if " req:" in s["text"]) == [f"GET req:{rid}", f"SET req:{rid}"]:
                own_redis += 1
            if sql_ids == {rid}:
                own_sql += 1
            for s in redis_rows:
                self.assertNotIn("val", json.dumps(s), "values are never kept")
        line = (f"phpredis + mysqlnd under php-fpm: {REQUESTS} requests: own SET and GET rows {own_redis} "
                f"({100.0 * own_redis / REQUESTS:.2f}%), own SQL row {own_sql} ({100.0 * own_sql / REQUESTS:.2f}%), "
                f"rows in a wrong transaction {len(wrong)}")
        print(line, flush=True)
        self.assertEqual(wrong, [], line)
        self.assertGreaterEqual(own_redis, 0.99 * REQUESTS, line)
        self.assertGreaterEqual(own_sql, 0.99 * REQUESTS, line)


if __name__ == "__main__":
    unittest.main()
