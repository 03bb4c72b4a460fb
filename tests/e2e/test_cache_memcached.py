"""MEMCACHED rows from real memcached clients (agent/protocols/memcached), against a real memcached started
here on a free loopback port, with a real collector:
- pymemcache (Debian python3-pymemcache, the text protocol) in a threaded http.server with a pooled
  client: per request set, get (a hit), get of a missing key (a miss), a two-key get (partial), add, incr,
  delete, a set with noreply (pymemcache's default), gets and cas, each of the request's own keys, 8
  concurrent keep-alive clients;
- libmemcached's tools in process mode, 8 processes at a time: memccp (set), memccat (get), memcrm (delete).
Checked: >= 99% of the requests hold exactly their own rows (under TXRAY_CACHE_KEYS=raw the key names the
request: no row of another request anywhere; masked, the text is the key pattern `get item:?`) with hit or
miss, the result word and the bytes both ways; the values never reach the store."""
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

from txraytest import (AGENT, PYTHON, TXRAY, Collector, TxrayTestCase, agent_env, bare_env, count_transactions,
                       free_port, get_all, show_json, wait_for, wait_port)

MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"
TOOLS = {t: shutil.which(t) or f"/usr/bin/{t}" for t in ("memccp", "memccat", "memcrm")}
VALUE = "mcval-4b1f"   # the values written: never kept
REQUESTS = 160
CLIENTS = 8


def have_pymemcache():
    return subprocess.run([PYTHON, "-c", "import pymemcache"], capture_output=True).returncode == 0


PY_FRONT = r'''
import http.server, os, socketserver, sys
from pymemcache.client.base import PooledClient

PORT, MPORT = int(sys.argv[1]), int(sys.argv[2])
VALUE = os.environ["CACHE_VALUE"]  # not on the command line: that is kept with the transactions
mc = PooledClient(("127.0.0.1", MPORT), max_pool_size=8, default_noreply=False)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        rid = self.path.split("/")[2]
        mc.set(f"item:{rid}", f"{VALUE}-{rid}")
        hit = mc.get(f"item:{rid}").decode()
        miss = mc.get(f"missing:{rid}")
        many = mc.get_many([f"item:{rid}", f"other:{rid}"])
        mc.add(f"ctr:{rid}", "10")
        n = mc.incr(f"ctr:{rid}", 5)
        gone = mc.delete(f"item:{rid}")
        mc.set(f"nr:{rid}", "v", noreply=True)  # pymemcache's default: no reply comes
        _, token = mc.gets(f"ctr:{rid}")
        swapped = mc.cas(f"ctr:{rid}", "16", token)
        body = f"{hit} {miss} {len(many)} {n} {gone} {swapped} {token.decode()}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


S(("127.0.0.1", PORT), H).serve_forever()
'''


def mc_rows(tx):
    return [s for s in tx["steps"] if s["kind"] == "MEMCACHED"]


def attrs(s):
    return s.get("attributes", {})


@unittest.skipUnless(os.path.exists(AGENT) and os.path.exists(MEMCACHED), "needs the agent and memcached")
class CacheMemcached(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.port = free_port()
        user = ["-u", "root"] if os.geteuid() == 0 else []
        self.server = self.spawn([MEMCACHED, "-p", str(self.port), "-l", "127.0.0.1", "-U", "0", "-m", "64", *user],
                                 env=bare_env())
        wait_port(self.port)

    def expected(self, i, raw, token):
        """(text, result, hits) of each row a request makes, in order, and the bytes (written, read) of
        each."""
        k = (lambda name: f"{name}:{i}") if raw else (lambda name: f"{name}:?")
        v = f"{VALUE}-{i}".encode()
        rows = [(f"set {k('item')}", "STORED", None), (f"get {k('item')}", "hit", "1"),
                (f"get {k('missing')}", "miss", "0"), (f"get {k('item')}", "partial", "1"),
                (f"add {k('ctr')}", "STORED", None), (f"incr {k('ctr')}", "ok", None),
                (f"delete {k('item')}", "DELETED", None), (f"set {k('nr')}", None, None),
                (f"gets {k('ctr')}", "hit", "1"), (f"cas {k('ctr')}", "STORED", None)]
        item, ctr = f"item:{i}".encode(), f"ctr:{i}".encode()
        value_line = b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (item, len(v), v)
        sizes = [(len(b"set %s 0 0 %d\r\n%s\r\n" % (item, len(v), v)), len(b"STORED\r\n")),
                 (len(b"get %s\r\n" % item), len(value_line)),
                 (len(b"get missing:%d\r\n" % i), len(b"END\r\n")),
                 (len(b"get %s other:%d\r\n" % (item, i)), len(value_line)),
                 (len(b"add %s 0 0 2\r\n10\r\n" % ctr), len(b"STORED\r\n")),
                 (len(b"incr %s 5\r\n" % ctr), len(b"15\r\n")),
                 (len(b"delete %s\r\n" % item), len(b"DELETED\r\n")),
                 (len(b"set nr:%d 0 0 1 noreply\r\nv\r\n" % i), 0),
                 (len(b"gets %s\r\n" % ctr), len(b"VALUE %s 0 2 %s\r\n15\r\nEND\r\n" % (ctr, token))),
                 (len(b"cas %s 0 0 2 %s\r\n16\r\n" % (ctr, token)), len(b"STORED\r\n"))]
        return rows, sizes

    def serve(self, app, raw):
        env = bare_env({"TXRAY_CACHE_KEYS": "raw" if raw else "mask", "CACHE_VALUE": VALUE})
        port = free_port()
        ids = list(range(5000 if raw else 7000, (5000 if raw else 7000) + REQUESTS))  # fresh keys each run
        paths = [f"/r/{i}" for i in ids]
        col = Collector(self.tmp, db=os.path.join(self.tmp, f"{app}.db"), endpoint=f"ipc://{self.tmp}/{app}.sock").start()
        try:
            log = open(os.path.join(self.tmp, f"{app}.log"), "wb")
            p = self.spawn([TXRAY, "run", "--collector", col.endpoint, "--app", app, "--", PYTHON, "-c", PY_FRONT,
                            str(port), str(self.port)], env=env, stdout=log, stderr=subprocess.STDOUT)
            wait_port(port, 60)
            answers, errors = get_all(port, paths, CLIENTS)
            self.assertEqual(errors, [])
            tokens = {}
            for i in ids:
                status, body = answers.get(f"/r/{i}")
                self.assertEqual((status, body.rsplit(" ", 1)[0]), (200, f"{VALUE}-{i} None 1 15 True True"), i)
                tokens[i] = body.rsplit(" ", 1)[1].encode()
            wait_for(lambda: count_transactions(col.db, app, "GET /%") >= len(paths), 60, what=f"{app} transactions")
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
            log.close()
            time.sleep(1.5)
            txs = show_json(col.db, "--app", app, "--last", str(10 * len(paths)))
        finally:
            col.stop()
        by_path = {t["name"].split(" ", 1)[1]: t for t in txs if t.get("kind") != "unattributed"
                   and t["name"].startswith("GET /")}
        self.assertEqual(len(by_path), len(paths))
        with open(col.db, "rb") as f:
            self.assertNotIn(VALUE.encode(), f.read())
        return ids, by_path, tokens

    @unittest.skipUnless(have_pymemcache(), "needs python3-pymemcache")
    def test_pymemcache(self):
        for raw in (True, False):
            name = f"pymemcache ({'raw' if raw else 'mask'})"
            ids, by_path, tokens = self.serve(f"pymemcache-{'raw' if raw else 'mask'}", raw)
            exact, wrong, missing = 0, [], []
            for i in ids:
                tx = by_path[f"/r/{i}"]
                rows = mc_rows(tx)
                if raw:
                    for s in rows:
                        found = {int(x) for x in re.findall(r":(\d+)", s["text"])}
                        if found and found != {i}:
                            wrong.append((i, s["text"]))
                want, sizes = self.expected(i, raw, tokens[i])
                got = [(s["text"], attrs(s).get("result"), attrs(s).get("hits")) for s in rows]
                ok = got == want and [(s["bytes_written"], s["bytes_read"]) for s in rows] == sizes
                ok = ok and attrs(rows[3]).get("keys") == "2" and all(s["error"] == "" for s in rows)
                ok = ok and attrs(rows[7]).get("noreply") == "1"
                exact += ok
                if not ok and len(missing) < 3:
                    missing.append((i, [(s["text"], attrs(s), s["bytes_written"], s["bytes_read"]) for s in rows]))
            line = f"{name}: {exact}/{len(ids)} requests hold exactly their own rows; {len(wrong)} of another request"
            print(line, flush=True)
            self.assertEqual(wrong, [], line)
            self.assertGreaterEqual(exact, 0.99 * len(ids), f"{line}; e.g. {missing}")

    @unittest.skipUnless(all(os.path.exists(t) for t in TOOLS.values()), "needs libmemcached-tools")
    def test_libmemcached_tools(self):
        """memccp, memccat and memcrm of one file each, 8 processes at a time: each process's transaction
        holds its own command's row with its result, and the `quit` the tool ends with."""
        n = 24
        files = []
        for i in range(n):
            f = os.path.join(self.tmp, f"doc{i}")
            with open(f, "w") as fh:
                fh.write(f"{VALUE}-{i}")
            files.append(f)
        servers = f"--servers=127.0.0.1:{self.port}"
        plan = [("memccp", i, [TOOLS["memccp"], servers, files[i]]) for i in range(n)] + \
               [("memccat", i, [TOOLS["memccat"], servers, f"doc{i}"]) for i in range(n)] + \
               [("memcrm", i, [TOOLS["memcrm"], servers, f"doc{i}"]) for i in range(n)]
        outputs = {}
        with Collector(self.tmp) as col:
            for tool in ("memccp", "memccat", "memcrm"):
                batch_plan = [x for x in plan if x[0] == tool]
                for k in range(0, n, CLIENTS):
                    procs = []
                    for t, i, args in batch_plan[k:k + CLIENTS]:
                        env = agent_env(col.endpoint, app=f"{t}-{i}", mode="process",
                                        extra={"TXRAY_CACHE_KEYS": "raw"})
                        procs.append((t, i, subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                                             stderr=subprocess.PIPE, text=True, cwd=self.tmp)))
                    for t, i, p in procs:
                        out, err = p.communicate(timeout=60)
                        self.assertEqual(p.returncode, 0, (t, i, err))
                        outputs[(t, i)] = out
            for i in range(n):
                self.assertEqual(outputs[("memccat", i)].strip(), f"{VALUE}-{i}")
            wait_for(lambda: count_transactions(col.db) >= 3 * n, 60, what="the tools' transactions")
            rows = {}
            for t, i, _ in plan:
                txs = [x for x in show_json(col.db, "--app", f"{t}-{i}", "--last", "3") if x.get("kind") != "unattributed"]
                self.assertEqual(len(txs), 1, (t, i))
                rows[(t, i)] = [(s["text"], attrs(s).get("result"), s["bytes_written"] > 0, s["bytes_read"] > 0)
                                for s in mc_rows(txs[0])]
            with open(col.db, "rb") as f:
                self.assertNotIn(VALUE.encode(), f.read())
        # each tool ends its connection with `quit`, which has no reply
        quit = ("quit", None, True, False)
        want = {"memccp": lambda i: [(f"set doc{i}", "STORED", True, True), quit],
                "memccat": lambda i: [(f"get doc{i}", "hit", True, True), quit],
                "memcrm": lambda i: [(f"delete doc{i}", "DELETED", True, True), quit]}
        own = sum(rows[(t, i)] == want[t](i) for t, i, _ in plan)
        print(f"libmemcached tools: {own}/{len(plan)} processes hold exactly their own row", flush=True)
        self.assertEqual(own, len(plan), [(k, v) for k, v in rows.items() if v != want[k[0]](k[1])][:4])


if __name__ == "__main__":
    unittest.main()
