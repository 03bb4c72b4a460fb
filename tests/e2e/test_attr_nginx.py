"""Issue 10, C event loops: nginx (2 workers, master process) as a reverse proxy in front of a threaded
keep-alive back-end. Each worker serves many connections on one thread; the upstream request is written
from the inbound request's handler, except on a new upstream connection, whose non-blocking connect
finishes after other requests were read. Two cases: upstream `keepalive 16` (HTTP/1.1, Connection ""),
and no upstream keep-alive (a new connection per call). Under 24 concurrent keep-alive connections and a
unique path per request: 0 calls in another request's transaction, >= 99% of transactions hold exactly
their own call, and the front's unattributed HTTP_CALL steps equal its missing calls (attribution.py)."""
import os
import signal
import subprocess
import unittest

from attribution import REQUESTS, check_front, drive, start_back
from txraytest import Collector, TxrayTestCase, agent_env, free_port, wait_port, wait_transactions

NGINX = "/usr/sbin/nginx"  # Debian package nginx (scripts/install-deps.sh)

CONF = """\
{user}worker_processes 2;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/client_body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  upstream back {{
    server 127.0.0.1:{backend};
    {keepalive}
  }}
  server {{
    listen 127.0.0.1:{port};
    location /r/ {{
      rewrite ^/r/(.*)$ /b/$1 break;
      proxy_pass http://back;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
"""


class NginxAttribution(TxrayTestCase):
    def run_case(self, app, keepalive):
        _, backend = start_back(self)
        port = free_port()
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(user="user root;\n" if os.geteuid() == 0 else "", dir=self.tmp, port=port,
                                backend=backend, keepalive="keepalive 16;" if keepalive else ""))
        with Collector(self.tmp) as col:
            nginx = self.spawn([NGINX, "-p", self.tmp, "-c", conf, "-e", os.path.join(self.tmp, "error.log")],
                               env=agent_env(col.endpoint, app=app), stdout=subprocess.DEVNULL)
            wait_port(port)
            answers = drive(port)
            self.assertEqual({i: a for i, a in answers.items() if a != f"b {i}"}, {})
            wait_transactions(col.db, REQUESTS)
            nginx.send_signal(signal.SIGQUIT)  # graceful: the workers exit and their agents send what they hold
            self.assertEqual(nginx.wait(timeout=30), 0)
        check_front(self, col.db, app)

    def test_upstream_keepalive(self):
        self.run_case("nginx-keepalive", keepalive=True)

    def test_no_upstream_keepalive(self):
        self.run_case("nginx-no-keepalive", keepalive=False)


if __name__ == "__main__":
    unittest.main()
