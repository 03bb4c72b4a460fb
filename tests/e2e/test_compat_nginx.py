"""Compatibility matrix (issue 12): nginx (master + 2 workers) serving static files (small, 1 MiB through
sendfile, a range, a conditional GET, a 404, HEAD) and a proxy location to a threaded back-end, loaded by
wrk and ab; once all bare, once with nginx, wrk and ab under the agent (nginx in HTTP mode, the load
clients in process mode; the back-end stays bare: it is not the subject).
Compared: every response of a fixed request list (status, headers but Date, body digest), wrk's and ab's
summaries without their timings (requests, non-2xx, socket errors, bytes), nginx's exit status after a
graceful stop (SIGQUIT), its output and error log (timestamps and pids normalized).
Checked in the store: one nginx transaction per request any client made (exactly), the right statuses,
one HTTP_CALL per proxied request; wrk's and ab's runs as process transactions holding one HTTP_CALL per
request they made."""
import http.client
import os
import re
import signal
import subprocess
import time
import unittest

from attribution import start_back
from compat import agent_loaded, clean_env, count, matrix_case, print_table, record, sha, steps, traced_env, \
    transactions
from txraytest import Collector, TxrayTestCase, free_port, wait_for, wait_port

NGINX = "/usr/sbin/nginx"
WRK = "/usr/bin/wrk"  # Debian package wrk (scripts/install-deps.sh)
AB = "/usr/bin/ab"    # Debian package apache2-utils

WRK_THREADS = 2
WRK_PER_THREAD = 150
AB_STATIC = 200
AB_PROXY = 60
PROXIED = 20

CONF = """\
{user}worker_processes 2;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log notice;
events {{ worker_connections 1024; }}
http {{
  access_log {dir}/access.log;
  default_type application/octet-stream;
  client_body_temp_path {dir}/client_body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  sendfile on;
  upstream back {{
    server 127.0.0.1:{backend};
    keepalive 8;
  }}
  server {{
    listen 127.0.0.1:{port};
    root {www};
    location /p/ {{
      rewrite ^/p/(.*)$ /b/$1 break;
      proxy_pass http://back;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
"""

# wrk runs for a time, not a count: this script stops each thread after WRK_REQUESTS responses (one
# connection per thread, so no response is in flight then) and leaves a marker file; the test then
# interrupts wrk (SIGINT), which prints its summary at once.
WRK_LUA = """\
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
end
local n = 0
local limit = tonumber(os.getenv("WRK_REQUESTS"))
local dir = os.getenv("WRK_MARKERS")
function response(status, headers, body)
  n = n + 1
  if n == limit then
    local f = io.open(dir .. "/done-" .. id, "w")
    f:close()
    wrk.thread:stop()
  end
end
"""

# Normalized in wrk's and ab's output: timings (latency, rates, durations, the percentile and connection
# time tables) and the server's port (a free port for each run); kept: the request, error and byte counts,
# the server's name and document length.
_WRK_TIME = re.compile(r"^(\s+Latency|\s+Req/Sec|Requests/sec|Transfer/sec|\s+Thread Stats)")
_AB_TIME = re.compile(r"^(Time taken|Requests per second|Time per request|Transfer rate)")


def wrk_summary(text):
    out = []
    for line in text.splitlines():
        if _WRK_TIME.match(line):
            continue
        out.append(re.sub(r" in [0-9.]+m?s,", " in -,", line))
    return out


def ab_summary(text):
    out = []
    for line in text.splitlines():
        if line.startswith("Connection Times"):
            break
        if not _AB_TIME.match(line):
            out.append(line)
    return out


# Normalized in nginx's error log: the date and time, the pid#tid of the process writing the line, the
# pids in its text (workers started and exited, the sender of a signal), the port; the connection number
# (`*N`: a counter shared by the workers, so the order in which two workers accept the readiness probe's
# and the first client's connections decides it); the master's `signal 17 (SIGCHLD)` and `signal 29
# (SIGIO)` lines (whether the two workers' exits arrive as one signal or two is timing); and the lines
# are sorted (the processes write in any order). The workers' "exited with code" lines are kept.
_LOG_PREFIX = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[(\w+)\] \d+#\d+: (\*\d+ )?")
_LOG_PIDS = re.compile(r"(process|from) \d+")
_LOG_SIGNALS = re.compile(r"signal (17|29) \(SIG(CHLD|IO)\) received")


def error_log(path, port):
    with open(path) as f:
        lines = [_LOG_PIDS.sub(r"\1 N", _LOG_PREFIX.sub(r"[\1] ", line)).replace(str(port), "PORT") for line in f]
    return sorted(line for line in lines if not _LOG_SIGNALS.search(line))


class Nginx(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.www = os.path.join(self.tmp, "www")
        os.makedirs(os.path.join(self.www, "sub"))
        with open(os.path.join(self.www, "index.html"), "w") as f:
            f.write("<html><body>" + "hello " * 100 + "</body></html>\n")
        with open(os.path.join(self.www, "sub", "page.html"), "w") as f:
            f.write("page\n" * 300)
        with open(os.path.join(self.www, "big.bin"), "wb") as f:
            f.write(bytes((i * 7919) & 0xFF for i in range(1 << 20)))
        with open(os.path.join(self.tmp, "stop.lua"), "w") as f:
            f.write(WRK_LUA)
        _, self.backend = start_back(self)

    def requests(self):
        """The fixed request list: (method, path, headers)."""
        mtime = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(os.path.getmtime(
            os.path.join(self.www, "index.html"))))
        reqs = [("GET", "/index.html", {}), ("GET", "/big.bin", {}), ("GET", "/sub/page.html", {}),
                ("GET", "/missing", {}), ("HEAD", "/index.html", {}), ("GET", "/big.bin", {"Range": "bytes=100-1099"}),
                ("GET", "/index.html", {"If-Modified-Since": mtime}), ("POST", "/index.html", {}),
                ("GET", "/sub/", {})]
        reqs += [("GET", f"/p/{i}", {}) for i in range(PROXIED)]
        return reqs

    def fetch_all(self, port):
        # Normalized: the Date header (the server's clock), nothing else.
        out = []
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for method, path, headers in self.requests():
            conn.request(method, path, body=b"x=1" if method == "POST" else None, headers=headers)
            r = conn.getresponse()
            body = r.read()
            hdrs = sorted((k.lower(), v) for k, v in r.getheaders() if k.lower() != "date")
            out.append((method, path, r.status, hdrs, len(body), sha(body)))
        conn.close()
        return out

    def run_wrk(self, port, env):
        markers = os.path.join(self.tmp, "markers")
        os.makedirs(markers, exist_ok=True)
        for f in os.listdir(markers):
            os.unlink(os.path.join(markers, f))
        env = dict(env, WRK_REQUESTS=str(WRK_PER_THREAD), WRK_MARKERS=markers)
        p = self.spawn([WRK, f"-t{WRK_THREADS}", f"-c{WRK_THREADS}", "-d60s", "-s", os.path.join(self.tmp, "stop.lua"),
                        f"http://127.0.0.1:{port}/index.html"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for(lambda: len(os.listdir(markers)) == WRK_THREADS, timeout=60, what="wrk's threads done")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        return p.returncode, wrk_summary(out.decode().replace(str(port), "PORT")), err.decode()

    def run_ab(self, port, env, n, conc, path):
        r = subprocess.run([AB, "-k", "-n", str(n), "-c", str(conc), f"http://127.0.0.1:{port}{path}"], env=env,
                           capture_output=True, timeout=120)
        return r.returncode, ab_summary(r.stdout.decode().replace(str(port), "PORT")), r.stderr.decode()

    def run_side(self, col):
        """One run: nginx, the request list, wrk, ab twice, graceful stop. col None: bare."""
        d = os.path.join(self.tmp, "agent" if col else "bare")
        os.makedirs(d)
        port = free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(user="user root;\n" if os.geteuid() == 0 else "", dir=d, port=port,
                                backend=self.backend, www=self.www))
        server_env = traced_env(col.endpoint, "nginx") if col else clean_env()
        client_env = (lambda app: traced_env(col.endpoint, app, mode="process")) if col else (lambda app: clean_env())
        with open(os.path.join(d, "out"), "wb") as out:
            nginx = self.spawn([NGINX, "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")], env=server_env,
                               stdout=out, stderr=subprocess.STDOUT)
            wait_port(port)
            if col:
                self.assertTrue(agent_loaded(nginx.pid), "the agent is not loaded in nginx")
            res = {"responses": self.fetch_all(port), "wrk": self.run_wrk(port, client_env("wrk")),
                   "ab static": self.run_ab(port, client_env("ab"), AB_STATIC, 4, "/sub/page.html"),
                   "ab proxy": self.run_ab(port, client_env("ab"), AB_PROXY, 3, "/p/ab")}
            if col:
                wait_for(lambda: count(col.db, "nginx") >= self.expected(), what="nginx's transactions")
                wait_for(lambda: count(col.db, "wrk") >= 1 and count(col.db, "ab") >= 2, what="wrk's and ab's")
            nginx.send_signal(signal.SIGQUIT)  # graceful: workers finish, their agents send what they hold
            res["exit"] = nginx.wait(timeout=30)
        with open(os.path.join(d, "out"), "rb") as f:
            res["output"] = f.read()
        res["error.log"] = error_log(os.path.join(d, "error.log"), port)
        with open(os.path.join(d, "access.log")) as f:
            res["access.log lines"] = len(f.readlines())
        return res

    def expected(self):
        return len(self.requests()) + WRK_THREADS * WRK_PER_THREAD + AB_STATIC + AB_PROXY

    @matrix_case('nginx, wrk, ab')
    def test_nginx_wrk_ab(self):
        bare = self.run_side(None)
        with Collector(self.tmp) as col:
            agent = self.run_side(col)
            time.sleep(0.5)  # anything more than expected would show now
        self.maxDiff = None
        for key in bare:
            self.assertEqual(agent[key], bare[key], key)
        self.assertEqual(bare["exit"], 0)
        log = "".join(bare["error.log"])
        self.assertEqual(log.count("exited with code 0"), 2, log)  # both workers, gracefully
        self.assertIn("directory index of", log)  # GET /sub/: 403
        self.assertEqual(bare["access.log lines"], self.expected())
        wrk_status, wrk_out, _ = bare["wrk"]
        total = WRK_THREADS * WRK_PER_THREAD
        self.assertIn(f"  {total} requests in -,", "\n".join(wrk_out))
        self.assertNotIn("Non-2xx", "\n".join(wrk_out))
        self.assertIn(f"Complete requests:      {AB_STATIC}", bare["ab static"][1])
        self.assertIn("Failed requests:        0", bare["ab proxy"][1])

        txs = transactions(col.db, "nginx")
        self.assertEqual(len(txs), self.expected())
        statuses = sorted(s for _, s, _ in txs)
        want = sorted([r[2] for r in bare["responses"]] + [200] * (total + AB_STATIC + AB_PROXY))
        self.assertEqual(statuses, want)
        calls = steps(col.db, "nginx", "HTTP_CALL", include_unattributed=True)
        self.assertEqual(len(calls), PROXIED + AB_PROXY, calls[:5])
        in_tx = steps(col.db, "nginx", "HTTP_CALL")
        wrk_calls = steps(col.db, "wrk", "HTTP_CALL")
        ab_calls = steps(col.db, "ab", "HTTP_CALL")
        self.assertEqual(len(wrk_calls), total)
        self.assertEqual(len(ab_calls), AB_STATIC + AB_PROXY)
        self.assertEqual([t[1] for t in transactions(col.db, "wrk")], [wrk_status])
        self.assertEqual(sorted(t[1] for t in transactions(col.db, "ab")), [0, 0])
        record("nginx", f"2 workers: {len(self.requests()) - PROXIED} static requests (sendfile, range, 304, 404, "
               f"HEAD, POST), {PROXIED} proxied, wrk, ab", bare["exit"], agent["exit"], True, len(txs),
               f"{len(in_tx)}/{len(calls)} proxy calls in their transaction")
        record("wrk", f"2 threads x {WRK_PER_THREAD} requests against nginx", wrk_status, agent["wrk"][0], True,
               len(transactions(col.db, "wrk")), f"{len(wrk_calls)} HTTP_CALL rows")
        record("ab", f"-k -n {AB_STATIC} -c 4 static, -n {AB_PROXY} -c 3 proxied", bare["ab static"][0],
               agent["ab static"][0], True, len(transactions(col.db, "ab")), f"{len(ab_calls)} HTTP_CALL rows")


def tearDownModule():
    print_table("nginx, wrk, ab")


if __name__ == "__main__":
    unittest.main()
