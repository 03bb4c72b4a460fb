"""A service whose response time the client chooses: GET /work?ms=N sleeps N ms and answers 200;
GET /fail answers 500. Run under the agent by tests/e2e/test_metrics_prometheus.py."""
import http.server
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/fail":
            code = 500
        else:
            time.sleep(int(urllib.parse.parse_qs(url.query).get("ms", ["0"])[0]) / 1000)
            code = 200
        body = b"ok\n"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
