#!/usr/bin/env python3
"""What the agent adds to a request through a FastCGI or uwsgi gateway, in one run.

Two stacks, each started afresh per run, bare and under the agent alternately (ROUNDS interleaved
rounds), loaded by ApacheBench (`ab -k -c 8 -n N`, itself never traced):
- fastcgi: nginx `fastcgi_pass` over a Unix socket to php8.2-fpm (pm = static, 2 workers) running a page
  that echoes its request id;
- uwsgi: nginx `uwsgi_pass` over a Unix socket to uWSGI (python3 plugin, 2 processes) running a WSGI
  app that does the same.
The figure is the CPU of the whole server side per request — nginx's master and workers plus the
application's master and workers, every thread (the agents' transport threads too) — from
/proc/<pid>/stat before and after the load, over the process trees. Under the agent nginx makes a
transaction and a call row per request (with trace context inserted into the FastCGI params or uwsgi
vars) and the application a transaction per request: the added figure is the price of both sides.
Medians of the rounds, and what the agent adds, side by side.

    bench/gateway/run.py BUILD_DIR        (env: N=20000 ROUNDS=5 CASES=fastcgi,uwsgi)
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
BUILD = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ.setdefault("TXRAY_BUILD_DIR", BUILD)
import nginxconf  # noqa: E402
from txraytest import Collector, agent_env, bare_env, free_port, wait_for, wait_port  # noqa: E402

N = int(os.environ.get("N", "20000"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
CASES = os.environ.get("CASES", "fastcgi,uwsgi").split(",")
NGINX = "/usr/sbin/nginx"
PHP_FPM = "/usr/sbin/php-fpm8.2"
UWSGI = "/usr/bin/uwsgi"
AB = "/usr/bin/ab"
TICK = os.sysconf("SC_CLK_TCK")

# inside nginx's http block (tests/e2e/nginxconf.py has the rest)
NGINX_HTTP = """\
  server {{
    listen 127.0.0.1:{port};
    keepalive_requests 1000000;
    location /r/ {{
{location}
    }}
  }}
"""
FASTCGI_LOCATION = """\
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {dir}/index.php;
      fastcgi_param SCRIPT_NAME /index.php;
      fastcgi_pass unix:{dir}/app.sock;"""
UWSGI_LOCATION = """\
      include /etc/nginx/uwsgi_params;
      uwsgi_pass unix:{dir}/app.sock;"""
FPM_CONF = """\
[global]
error_log = {dir}/fpm.log
daemonize = no
[www]
listen = {dir}/app.sock
listen.mode = 0666
pm = static
pm.max_children = 2
clear_env = no
"""
PHP = "<?php header('Content-Type: text/plain'); echo 'php ' . basename($_SERVER['REQUEST_URI']);\n"
WSGI = """\
def application(environ, start_response):
    body = ("py " + environ["PATH_INFO"].rsplit("/", 1)[-1]).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


def tree(root):
    """root and its descendants (from /proc: the children of each process)."""
    pids, todo = [], [root]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def cpu_ticks(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (every thread's)
        except OSError:
            pass
    return total


def one_run(case, traced, col, tmp):
    d = tempfile.mkdtemp(dir=tmp)
    port = free_port()
    loc = (FASTCGI_LOCATION if case == "fastcgi" else UWSGI_LOCATION).format(dir=d)
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(nginxconf.conf(d, NGINX_HTTP.format(port=port, location=loc), workers=1))
    env = (lambda app: agent_env(col.endpoint, app=app)) if traced else (lambda app: bare_env())
    if case == "fastcgi":
        with open(os.path.join(d, "index.php"), "w") as f:
            f.write(PHP)
        with open(os.path.join(d, "fpm.conf"), "w") as f:
            f.write(FPM_CONF.format(dir=d))
        app_args = [PHP_FPM, "-F", "-R", "-y", os.path.join(d, "fpm.conf")]
    else:
        with open(os.path.join(d, "app.py"), "w") as f:
            f.write(WSGI)
        app_args = [UWSGI, "--plugin", "python3", "--socket", os.path.join(d, "app.sock"), "--chmod-socket=666",
                    "--processes", "2", "--master", "--wsgi-file", os.path.join(d, "app.py"),
                    "--disable-logging", "--die-on-term"]
    procs = []
    try:
        app = subprocess.Popen(app_args, env=env(case), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(app)
        wait_for(lambda: os.path.exists(os.path.join(d, "app.sock")), what="the application's socket")
        nginx = subprocess.Popen([NGINX, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e",
                                  os.path.join(d, "nginx-error.log")], env=env("nginx"),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(nginx)
        wait_port(port)
        # warm up: every worker started, PHP's opcache and Python's imports done
        subprocess.run([AB, "-k", "-q", "-c", "8", "-n", "400", f"http://127.0.0.1:{port}/r/1"],
                       check=True, capture_output=True, env=bare_env(), timeout=120)
        time.sleep(0.2)
        app_pids, nginx_pids = tree(app.pid), tree(nginx.pid)
        before = (cpu_ticks(nginx_pids), cpu_ticks(app_pids))
        out = subprocess.run([AB, "-k", "-q", "-c", "8", "-n", str(N), f"http://127.0.0.1:{port}/r/7"],
                             check=True, capture_output=True, text=True, env=bare_env(), timeout=600).stdout
        after = (cpu_ticks(nginx_pids), cpu_ticks(app_pids))
        failed = [ln for ln in out.splitlines() if ln.startswith(("Failed requests", "Non-2xx"))]
        if any(ln.split(":")[1].strip() != "0" for ln in failed):
            raise RuntimeError(f"{case}: ab saw failures: {failed}")
        return [(a - b) / TICK / N * 1e6 for a, b in zip(after, before)]  # µs per request: nginx, app
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


def main():
    have = {"fastcgi": os.access(PHP_FPM, os.X_OK), "uwsgi": os.access(UWSGI, os.X_OK)}
    if not os.access(NGINX, os.X_OK) or not os.access(AB, os.X_OK):
        print("bench/gateway: needs nginx and ab (scripts/install-deps.sh --test)")
        return
    cases = [c for c in CASES if have.get(c)]
    with tempfile.TemporaryDirectory(prefix="txray-bench-") as tmp, Collector(tmp) as col:
        results = {}
        for _ in range(ROUNDS):
            for case in cases:
                for traced in (False, True):
                    results.setdefault((case, traced), []).append(one_run(case, traced, col, tmp))
    print(f"CPU µs per request of nginx + the application, every process and thread (median of {ROUNDS} "
          f"interleaved rounds, ab -k -c 8 -n {N})")
    print(f"{'stack':<40}{'side':<8}{'bare':>10}{'agent':>10}{'added':>10}")
    for case, label in (("fastcgi", "nginx fastcgi_pass + php-fpm (FastCGI)"), ("uwsgi", "nginx uwsgi_pass + uWSGI (uwsgi)")):
        if (case, False) not in results:
            continue
        for i, side in ((0, "nginx"), (1, "app"), (None, "both")):
            pick = (lambda r: r[0] + r[1]) if i is None else (lambda r, i=i: r[i])
            bare = statistics.median(pick(r) for r in results[(case, False)])
            agent = statistics.median(pick(r) for r in results[(case, True)])
            print(f"{label if side == 'nginx' else '':<40}{side:<8}{bare:>10.1f}{agent:>10.1f}{agent - bare:>+10.1f}")


if __name__ == "__main__":
    main()
