"""The threaded back-end of the attribution tests: `GET /b/<id>` answers `b <id>` (HTTP/1.1, keep-alive
unless the caller says `Connection: close`) after 0-2 ms, so answers come back out of order.
Usage: back.py PORT"""
import http.server
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        parts = self.path.split("/")
        if len(parts) != 3 or parts[1] != "b":
            self.send_error(404)
            return
        time.sleep((hash(parts[2]) % 3) / 1000)
        body = f"b {parts[2]}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer.request_queue_size = 128
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
