"""PyMySQL (pure Python, its own MySQL protocol) in a threaded http.server: GET /q/<id> runs
SELECT name FROM people WHERE id = %s on a connection of its own thread (PyMySQL interpolates the value
client-side: a text COM_QUERY); GET /bad/<id> reads a table that does not exist."""
import http.server
import socketserver
import sys
import threading

import pymysql

PORT, DB_PORT = int(sys.argv[1]), int(sys.argv[2])
local = threading.local()


def conn():
    if not hasattr(local, "c"):
        local.c = pymysql.connect(host="127.0.0.1", port=DB_PORT, user="root", database="txray", autocommit=True)
    return local.c


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        kind, rid = self.path.split("/")[1:3]
        with conn().cursor() as cur:
            try:
                if kind == "q":
                    cur.execute("SELECT name FROM people WHERE id = %s", (int(rid),))
                    body = f"{rid} {cur.fetchone()[0]}"
                else:
                    cur.execute("SELECT name FROM missing_table WHERE id = %s", (int(rid),))
                    body = f"{rid} ?"
            except pymysql.MySQLError as e:
                body = f"{rid} error {e.args[0]}"
        b = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


S(("127.0.0.1", PORT), H).serve_forever()
