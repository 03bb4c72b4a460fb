"""Compatibility matrix (issue 12): HTTP servers in managed runtimes — a Node.js http server, a JDK 17
com.sun.net.httpserver.HttpServer (8-thread executor, java.net.http.HttpClient), a Python asyncio
server (streams) — each answering `GET /r/<id>` by calling a threaded back-end once (for JDK and asyncio
the fronts of the attribution tests, tests/e2e/attr/ and test_attr_jdk.py; a Node.js server of its own,
NODE_SERVER below). Each runs bare, then under `txray run` (so with
the Node.js and Python shims, as a user would run it); the back-end stays bare.
Compared: every answer of a fixed workload (REQUESTS requests over CONNECTIONS keep-alive connections),
the server's exit status after SIGTERM and its stdout and stderr (txray run's own line and the port
normalized). Checked in the store: exactly one transaction per request, status 200, and one HTTP_CALL
per request (in its transaction, or unattributed)."""
import os
import shutil
import signal
import subprocess
import unittest

from attribution import ATTR, drive, start_back
from compat import clean_env, count, matrix_case, print_table, record, steps, strip_txray_run, transactions, \
    txray_run
from test_attr_jdk import FRONT_JAVA, JAVAC, JAVA
from txraytest import PYTHON, Collector, TxrayTestCase, free_port, wait_for, wait_port

NODE = shutil.which("node") or "/usr/bin/node"
REQUESTS = 60
CONNECTIONS = 4


# The Node.js server of the matrix (node_front.js, the attribution tests' front, prints what the shim is
# doing at exit: a program that looks at the agent, not one to compare). GET /r/<id> calls the back-end's
# GET /b/<id> through a keep-alive http.Agent pool and answers `r <id> <status> <body>`; it logs its start
# and, at SIGTERM, how many requests it served.
NODE_SERVER = r"""
'use strict';
const http = require('http');
const [port, backPort] = process.argv.slice(2);
const pool = new http.Agent({ keepAlive: true, maxSockets: 4 });
let served = 0;
const server = http.createServer((req, res) => {
  const m = /^\/r\/(\w+)$/.exec(req.url);
  if (!m) { res.statusCode = 404; res.end(); return; }
  const id = m[1];
  http.get({ host: '127.0.0.1', port: backPort, path: '/b/' + id, agent: pool }, (r) => {
    let body = '';
    r.setEncoding('latin1');
    r.on('data', (d) => { body += d; });
    r.on('end', () => {
      served++;
      res.setHeader('content-type', 'text/plain');
      res.end(`r ${id} ${r.statusCode} ${body}`);
    });
  }).on('error', (e) => { res.statusCode = 502; res.end(String(e)); });
});
server.keepAliveTimeout = 60000;
server.listen(Number(port), '127.0.0.1', () => console.log(`listening on ${port}`));
process.on('SIGTERM', () => { console.log(`served ${served} requests`); process.exit(0); });
"""


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def tearDownModule():
    print_table("servers in managed runtimes")


class Runtimes(TxrayTestCase):
    def serve(self, app, cmd, col, port_timeout=30):
        """Runs the front (cmd: {port} and {back} placeholders) bare (col None) or under `txray run`,
        drives it, stops it with SIGTERM; returns (answers, exit status, stdout, stderr, port)."""
        port = free_port()
        args = [a.format(port=port, back=self.back) for a in cmd]
        prefix = txray_run(col.endpoint, app) if col else []
        side = "agent" if col else "bare"
        paths = [os.path.join(self.tmp, f"{app}-{side}.{k}") for k in ("out", "err")]
        with open(paths[0], "wb") as out, open(paths[1], "wb") as err:
            p = self.spawn([*prefix, *args], env=clean_env(), stdout=out, stderr=err)
            wait_port(port, timeout=port_timeout)
            answers = drive(port, REQUESTS, CONNECTIONS)
            if col:
                wait_for(lambda: count(col.db, app) >= REQUESTS, what=f"{app}'s transactions")
            p.send_signal(signal.SIGTERM)
            status = p.wait(timeout=30)
        # Normalized: txray run's notice on stderr, and the port (a free port is chosen for each run).
        out, err = (read_bytes(x).replace(str(port).encode(), b"PORT") for x in paths)
        return answers, status, out, strip_txray_run(err)

    def compare(self, app, program, cmd, port_timeout=30):
        _, self.back = start_back(self)
        bare = self.serve(app, cmd, None, port_timeout)
        with Collector(self.tmp) as col:
            agent = self.serve(app, cmd, col, port_timeout)
        self.assertEqual({i: a for i, a in bare[0].items() if not a.startswith(f"r {i}")}, {})
        for what, b, a in zip(("answers", "exit status", "stdout", "stderr"), bare, agent):
            self.assertEqual(a, b, f"{app}: {what}")
        txs = transactions(col.db, app)
        self.assertEqual(sorted(t[0] for t in txs), sorted(f"GET /r/{i}" for i in range(REQUESTS)))
        self.assertEqual({t[1] for t in txs}, {200})
        calls = steps(col.db, app, "HTTP_CALL", include_unattributed=True)
        in_tx = steps(col.db, app, "HTTP_CALL")
        self.assertEqual(len([c for c in calls if "/b/" in c]), REQUESTS, calls[:5])
        record(program, f"{REQUESTS} requests over {CONNECTIONS} keep-alive connections, each calling a "
               f"back-end; SIGTERM", bare[1], agent[1], True, len(txs),
               f"{len(in_tx)}/{len(calls)} calls in their transaction")
        return bare[2]

    @matrix_case('Node.js http server')
    def test_node_http_server(self):
        with open(os.path.join(self.tmp, "server.js"), "w") as f:
            f.write(NODE_SERVER)
        out = self.compare("node", "Node.js http server",
                           [NODE, os.path.join(self.tmp, "server.js"), "{port}", "{back}"])
        self.assertEqual(out, b"listening on PORT\nserved %d requests\n" % REQUESTS)

    @matrix_case('JDK HttpServer')
    def test_jdk_httpserver(self):
        with open(os.path.join(self.tmp, "Front.java"), "w") as f:
            f.write(FRONT_JAVA)
        subprocess.run([JAVAC, "-d", self.tmp, os.path.join(self.tmp, "Front.java")], env=clean_env(), check=True,
                       timeout=180)
        self.compare("jdk", "JDK HttpServer", [JAVA, "-cp", self.tmp, "Front", "{port}", "{back}"], port_timeout=60)

    @matrix_case('Python asyncio server')
    def test_python_asyncio_server(self):
        self.compare("asyncio", "Python asyncio server",
                     [PYTHON, os.path.join(ATTR, "asyncio_front.py"), "{port}", "{back}", "streams"])


if __name__ == "__main__":
    unittest.main()
