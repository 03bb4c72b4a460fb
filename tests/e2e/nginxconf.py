"""nginx.conf for the tests and benches that run Debian's nginx as a front (php-fpm, uWSGI): in the
foreground, as root (the agent and the test's files are the test's own), every path nginx writes under
the test's folder. `http` is what goes inside the http block: the servers and their locations."""

PRELUDE = """\
user root;
worker_processes {workers};
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/client_body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
"""


def conf(dir, http, workers=2):
    return PRELUDE.format(dir=dir, workers=workers) + http + "}\n"
