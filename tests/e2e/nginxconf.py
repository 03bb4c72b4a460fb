"""nginx as a front for the gateway tests and benches (php-fpm, uWSGI).

conf(): an nginx.conf in the foreground, as root (the agent and the test's files are the test's own),
every path nginx writes under the test's folder; `http` is what goes inside the http block: the servers
and their locations. post_all(): the POSTs whose bodies the application answers with their size, the last
one past client_body_buffer_size, so that nginx buffers it in a file and (`sendfile on`) sends it by
sendfile."""

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


POSTS = 24


def post_body(i):
    return b"%d:" % i + b"p" * (97 * i if i < POSTS - 1 else 200000)


def post_all(test, port):
    """POST /p/<i> for i < POSTS over one keep-alive connection; each answer must be `post <i> <size>`."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        for i in range(POSTS):
            conn.request("POST", f"/p/{i}", body=post_body(i), headers={"Content-Type": "text/plain"})
            r = conn.getresponse()
            test.assertEqual((r.status, r.read().decode()), (200, f"post {i} {len(post_body(i))}"))
    finally:
        conn.close()
