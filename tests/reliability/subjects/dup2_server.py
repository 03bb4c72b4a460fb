"""An HTTP server that tidies up like some daemons do: after its first requests it dup2()s /dev/null over
every descriptor it did not open itself (found by walking /proc/self/fd), then serves on. Each response
says which descriptor the request's connection got and what the next open() returns, so a run under the
agent can be compared with a bare run byte for byte.

usage: dup2_server.py PORT REQUESTS_BEFORE REQUESTS_AFTER"""
import http.server
import os
import sys

port, before, after = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
mine = {0, 1, 2}


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        fd = os.open("/dev/null", os.O_RDONLY)
        os.close(fd)
        body = f"{self.path} conn={self.connection.fileno()} next_open={fd}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = http.server.HTTPServer(("127.0.0.1", port), H)
mine.add(srv.socket.fileno())
srv.handle_request()  # the test's port probe (connects, sends nothing)
for _ in range(before):
    srv.handle_request()
null = os.open("/dev/null", os.O_RDWR)
mine.add(null)
replaced = 0
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    if fd in mine:
        continue
    try:
        os.dup2(null, fd)
        replaced += 1
    except OSError:
        pass  # the directory's own descriptor, already closed
os.close(null)
for _ in range(after):
    srv.handle_request()
print("served", before + after, flush=True)
