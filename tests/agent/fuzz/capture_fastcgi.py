#!/usr/bin/python3
"""Captures what nginx's fastcgi_pass and php-fpm say to each other, for the FastCGI fuzz targets' seeds.

Runs Debian's nginx and php8.2-fpm (no agent) with a recording TCP proxy between them and drives a few
requests: GET with a query, a POST with a body, a page that sets its status, a request with a traceparent
header, a large header (4-byte FastCGI lengths), and the same over a kept connection
(fastcgi_keep_conn, FCGI_KEEP_CONN). Writes captures/fastcgi_nginx_php_fpm.jsonl in the format of the
other captures: one JSON line per chunk the proxy read, ["conn", ""] starting a connection, [">", hex] what
nginx wrote, ["<", hex] what php-fpm answered. make_cache_seeds.py turns it into seeds.

  /usr/bin/python3 capture_fastcgi.py        (as root: nginx and php-fpm are started as root here)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "captures", "fastcgi_nginx_php_fpm.jsonl")

NGINX_CONF = """\
user root;
worker_processes 1;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {dir}/client_body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  large_client_header_buffers 4 16k;
  upstream kept {{ server 127.0.0.1:{proxy}; keepalive 2; }}
  server {{
    listen 127.0.0.1:{port};
    root {dir}/www;
    location /k/ {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {dir}/www/index.php;
      fastcgi_param SCRIPT_NAME /index.php;
      fastcgi_keep_conn on;
      fastcgi_pass kept;
    }}
    location ~ \\.php$ {{
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {dir}/www$fastcgi_script_name;
      fastcgi_pass 127.0.0.1:{proxy};
    }}
  }}
}}
"""

FPM_CONF = """\
[global]
error_log = {dir}/fpm.log
daemonize = no
[www]
listen = 127.0.0.1:{fpm}
pm = static
pm.max_children = 1
catch_workers_output = yes
"""

PAGES = {
    "index.php": "<?php header('Content-Type: text/plain'); echo 'hello ', $_SERVER['REQUEST_URI'];\n",
    "form.php": "<?php echo 'got ', strlen(file_get_contents('php://input')), ' bytes';\n",
    "missing.php": "<?php http_response_code(404); error_log('not here'); echo 'no';\n",
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit("port %d never opened" % port)


class Recorder:
    """A TCP proxy that logs every chunk it reads, in order, one connection after another."""

    def __init__(self, listen, target):
        self.lines, self.lock = [], threading.Lock()
        self.target = target
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen))
        self.sock.listen(8)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            a, _ = self.sock.accept()
            b = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.lines.append(["conn", ""])
            conn = len([x for x in self.lines if x[0] == "conn"]) - 1
            for src, dst, d in ((a, b, ">"), (b, a, "<")):
                threading.Thread(target=self.pump, args=(src, dst, d, conn), daemon=True).start()

    def pump(self, src, dst, d, conn):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            with self.lock:
                self.lines.append([d, data.hex(), conn])
            dst.sendall(data)


def main():
    d = tempfile.mkdtemp(prefix="txray-fcgi-capture-")
    os.makedirs(os.path.join(d, "www"))
    for name, text in PAGES.items():
        with open(os.path.join(d, "www", name), "w") as f:
            f.write(text)
    port, proxy, fpm = free_port(), free_port(), free_port()
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(dir=d, port=port, proxy=proxy))
    with open(os.path.join(d, "fpm.conf"), "w") as f:
        f.write(FPM_CONF.format(dir=d, fpm=fpm))
    rec = Recorder(proxy, fpm)
    procs = [subprocess.Popen(["/usr/sbin/php-fpm8.2", "-F", "-R", "-y", os.path.join(d, "fpm.conf")])]
    wait_port(fpm)
    procs.append(subprocess.Popen(["/usr/sbin/nginx", "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e",
                                   os.path.join(d, "nginx-error.log")]))
    wait_port(port)
    base = "http://127.0.0.1:%d" % port
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    reqs = [
        urllib.request.Request(base + "/index.php?user=alice&id=42"),
        urllib.request.Request(base + "/form.php", data=b"a=1&b=" + b"x" * 300, method="POST"),
        urllib.request.Request(base + "/missing.php"),
        urllib.request.Request(base + "/index.php", headers={"traceparent": tp, "tracestate": "congo=t61rcWkgMzE"}),
        urllib.request.Request(base + "/index.php", headers={"Cookie": "c=" + "v" * 400}),
        urllib.request.Request(base + "/k/one"),
        urllib.request.Request(base + "/k/two?x=1"),
    ]
    for r in reqs:
        try:
            urllib.request.urlopen(r, timeout=10).read()
        except urllib.error.HTTPError as e:  # the 404 page
            e.read()
        time.sleep(0.2)  # one connection's chunks finish before the next begins
    for p in procs:
        p.terminate()
        p.wait(timeout=20)
    # one connection after another, each with its chunks in the order they were read
    conns = {}
    for line in rec.lines:
        if line[0] != "conn":
            conns.setdefault(line[2], []).append(line[:2])
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        for k in sorted(conns):
            f.write(json.dumps(["conn", ""]) + "\n")
            for line in conns[k]:
                f.write(json.dumps(line) + "\n")
    print("%d connections, %d chunks -> %s" % (len(conns), sum(len(c) for c in conns.values()), OUT))


main()
