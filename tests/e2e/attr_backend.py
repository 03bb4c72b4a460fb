"""The back-end of the attribution tests (tests/e2e/test_attr_*.py): a threaded keep-alive HTTP/1.1
server; GET /b/<id> answers "b <id>\\n". Usage: python3 attr_backend.py PORT (prints "listening" when up)."""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every answer has a Content-Length

    def do_GET(self):
        if self.path.startswith("/b/"):
            status, body = 200, f"b {self.path[3:]}\n".encode()
        else:
            status, body = 404, b"no such resource\n"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


if __name__ == "__main__":
    srv = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    print("listening", flush=True)
    srv.serve_forever()
