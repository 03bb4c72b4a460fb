"""HTTP/1.1 `Upgrade: h2c` (RFC 7540 §3.2; issue 16), inbound and outbound, with real third-party programs.

The server is built on Debian's python3-h2 (a thread per connection, plain sockets): it answers an
upgrade request `101 Switching Protocols`, then speaks HTTP/2 and sends the upgraded request's response on
stream 1. Clients: a python3-h2 client (its own sockets: the agent's outbound tracker follows it) that
upgrades and then opens 8 more streams at once on the same connection, and curl 7.88 (`--http2` on
http:// URLs upgrades; its second URL reuses the connection as stream 3). Checked:
  - the clients' answers are the same with and without the agent;
  - inbound: the upgraded request is ONE transaction named by its method and path, status from stream
    1's :status, attributes protocol=h2 and upgrade=h2c; each later stream its own transaction;
  - outbound: the upgraded request is one HTTP_CALL row whose status and bytes come from stream 1; each
    later stream its own row; every row (and curl's) linked to its callee (same trace, the callee's
    parent span = the row's span id);
  - a server that does not upgrade (Python's http.server answers 200 to the Upgrade request) keeps
    working as plain HTTP/1.1, a keep-alive connection carrying a second request after it.
"""
import os
import subprocess
import textwrap
import unittest

from txraytest import (PYTHON, Collector, TxrayTestCase, agent_env, bare_env, free_port, show_json, wait_port,
                       wait_transactions)

SERVER = textwrap.dedent("""
    import socket, sys, threading
    import h2.config, h2.connection, h2.events

    def respond(conn, stream, path):
        status = path.rsplit("/", 1)[1] if path.startswith("/status/") else "200"
        n = int(path.rsplit("/", 1)[1]) if path.startswith("/size/") else 1
        body = (path + "\\n").encode() * n
        conn.send_headers(stream, [(":status", status), ("content-length", str(len(body)))])
        conn.send_data(stream, body, end_stream=True)

    def handle(sock):
        with sock:
            buf = b""
            while b"\\r\\n\\r\\n" not in buf:
                d = sock.recv(65536)
                if not d:
                    return
                buf += d
            head, rest = buf.split(b"\\r\\n\\r\\n", 1)
            lines = head.decode("latin-1").split("\\r\\n")
            path = lines[0].split(" ")[1]
            hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
            conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
            conn.initiate_upgrade_connection(hdrs["http2-settings"])
            sock.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nConnection: Upgrade\\r\\nUpgrade: h2c\\r\\n\\r\\n")
            respond(conn, 1, path)
            sock.sendall(conn.data_to_send())
            while True:
                for ev in (conn.receive_data(rest) if rest else []):
                    if isinstance(ev, h2.events.RequestReceived):
                        respond(conn, ev.stream_id, dict(ev.headers)[b":path"].decode())
                    elif isinstance(ev, h2.events.ConnectionTerminated):
                        return
                out = conn.data_to_send()
                if out:
                    sock.sendall(out)
                rest = sock.recv(65536)
                if not rest:
                    return

    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", int(sys.argv[1])))
    srv.listen(64)
    while True:
        s, _ = srv.accept()
        threading.Thread(target=handle, args=(s,), daemon=True).start()
""")

# Upgrades with GET /size/2, then 8 streams at once: every 4th one a 503.
CLIENT = textwrap.dedent("""
    import socket, sys
    import h2.connection, h2.events
    port, n = int(sys.argv[1]), int(sys.argv[2])
    s = socket.create_connection(("127.0.0.1", port))
    c = h2.connection.H2Connection()
    settings = c.initiate_upgrade_connection()
    s.sendall(b"GET /size/2 HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nConnection: Upgrade, HTTP2-Settings\\r\\n"
              b"Upgrade: h2c\\r\\nHTTP2-Settings: %s\\r\\n\\r\\n" % (port, settings))
    buf = b""
    while b"\\r\\n\\r\\n" not in buf:
        buf += s.recv(65536)
    head, rest = buf.split(b"\\r\\n\\r\\n", 1)
    assert head.startswith(b"HTTP/1.1 101 "), head
    s.sendall(c.data_to_send())
    paths = {1: "/size/2"}
    for i in range(n):
        sid = c.get_next_available_stream_id()
        paths[sid] = "/status/503" if i % 4 == 0 else "/size/%d" % (i + 1)
        c.send_headers(sid, [(":method", "GET"), (":path", paths[sid]), (":authority", "127.0.0.1:%d" % port),
                             (":scheme", "http"), ("user-agent", "h2c-client")], end_stream=True)
    s.sendall(c.data_to_send())
    got, bodies, open_ = {}, {}, set(paths)
    while open_:
        for ev in c.receive_data(rest):
            if isinstance(ev, h2.events.ResponseReceived):
                got[ev.stream_id] = dict(ev.headers)[b":status"].decode()
            elif isinstance(ev, h2.events.DataReceived):
                bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                open_.discard(ev.stream_id)
        out = c.data_to_send()
        if out:
            s.sendall(out)
        if open_:
            rest = s.recv(65536)
            assert rest, "connection closed"
    c.close_connection()
    s.sendall(c.data_to_send())
    s.close()
    for sid in sorted(paths):
        print(sid, paths[sid], got[sid], len(bodies.get(sid, b"")))
""")

# Python's http.server: answers the Upgrade request 200 as HTTP/1.1 (keep-alive).
PLAIN_SERVER = textwrap.dedent("""
    import http.server, sys
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            body = (self.path + "\\n").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")

# Two requests on one keep-alive connection, the first asking for the upgrade (http.client: the agent's
# own tracker follows it).
PLAIN_CLIENT = textwrap.dedent("""
    import http.client, sys
    conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
    conn.request("GET", "/first", headers={"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c",
                                           "HTTP2-Settings": "AAMAAABkAAQCAAAAAAIAAAAA"})
    r = conn.getresponse()
    print(r.status, r.read().decode().strip())
    conn.request("GET", "/second")
    r = conn.getresponse()
    print(r.status, r.read().decode().strip())
""")

STREAMS = 8


def calls(tx):
    return [s for s in tx["steps"] if s["kind"] == "HTTP_CALL"]


class H2cUpgradeTest(TxrayTestCase):
    def setUp(self):
        super().setUp()
        for name, text in (("server.py", SERVER), ("client.py", CLIENT), ("plain_server.py", PLAIN_SERVER),
                           ("plain_client.py", PLAIN_CLIENT)):
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)

    def run_ok(self, args, env):
        r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def assert_linked(self, row, by_txid, client):
        self.assertIn("callee_txid", row, f"row not linked: {row}")
        callee = by_txid[row["callee_txid"]]
        self.assertEqual(callee["parent_span_id"], row["span_id"])
        self.assertEqual(callee["trace_id"], client["trace_id"])
        self.assertEqual(callee["name"], "GET " + row["text"].split(":%d" % self.port, 1)[1])
        self.assertEqual(callee["status"], row["status"])
        return callee

    def test_upgrade_inbound_and_outbound(self):
        self.port = port = free_port()
        client = [PYTHON, os.path.join(self.tmp, "client.py"), str(port), str(STREAMS)]
        urls = [f"http://127.0.0.1:{port}/size/3", f"http://127.0.0.1:{port}/status/503"]
        curl = ["curl", "-s", "--http2", *urls]
        # Baseline without the agent.
        srv = self.spawn([PYTHON, os.path.join(self.tmp, "server.py"), str(port)], env=bare_env())
        wait_port(port)
        bare = self.run_ok(client, bare_env())
        bare_curl = self.run_ok(curl, bare_env())
        self.assertIn("1 /size/2 200 16", bare)
        self.assertEqual(bare_curl, "/size/3\n" * 3 + "/status/503\n")
        srv.terminate()
        srv.wait(10)

        with Collector(self.tmp) as col:
            self.spawn([PYTHON, os.path.join(self.tmp, "server.py"), str(port)], env=agent_env(col.endpoint, app="h2srv"))
            wait_port(port)
            traced = self.run_ok(client, agent_env(col.endpoint, app="h2cli", mode="process"))
            traced_curl = self.run_ok(curl, agent_env(col.endpoint, app="curl", mode="process"))
            wait_transactions(col.db, 1 + STREAMS + 1 + 2 + 1)
        self.assertEqual(traced, bare, "the h2 client's answers differ with the agent")
        self.assertEqual(traced_curl, bare_curl, "curl's answers differ with the agent")

        txs = show_json(col.db, "--last", "100")
        by_txid = {t["txid"]: t for t in txs}
        by_app = {}
        for t in txs:
            by_app.setdefault(t["app"], []).append(t)
        # wait_port's connection made no request: no transaction
        srv_txs = by_app["h2srv"]
        self.assertEqual(len(srv_txs), 1 + STREAMS + 2, sorted(t["name"] for t in srv_txs))
        upgraded = [t for t in srv_txs if t["attributes"].get("upgrade") == "h2c"]
        self.assertEqual(sorted(t["name"] for t in upgraded), ["GET /size/2", "GET /size/3"])
        for t in srv_txs:
            self.assertEqual(t["kind"], "http")
            self.assertEqual(t["attributes"].get("protocol"), "h2")
            self.assertEqual(t["status"], 503 if t["name"] == "GET /status/503" else 200)
            self.assertEqual(t["error"], "HTTP 503" if t["status"] == 503 else "")
            self.assertGreater(t["bytes_written"], 9)
        # /size/2 on stream 1: the 101 head, then HEADERS and a DATA frame of 2 lines of 8 bytes
        up = [t for t in upgraded if t["name"] == "GET /size/2"][0]
        self.assertGreaterEqual(up["bytes_written"], 9 + 9 + 16)

        # The h2 client: one row per stream, stream 1's from the upgraded request.
        cli = by_app["h2cli"][0]
        rows = calls(cli)
        self.assertEqual(len(rows), 1 + STREAMS, [r["text"] for r in rows])
        first = rows[0]
        self.assertEqual(first["text"], f"http://127.0.0.1:{port}/size/2")
        self.assertEqual(first["attributes"].get("upgrade"), "h2c")
        self.assertEqual(first["status"], 200)
        self.assertGreaterEqual(first["bytes_read"], 9 + 9 + 16)  # the 101 head, then stream 1's frames
        callees = set()
        for r in rows:
            self.assertEqual(r["attributes"].get("protocol"), "h2")
            self.assertEqual(r["status"], 503 if r["text"].endswith("/status/503") else 200)
            callee = self.assert_linked(r, by_txid, cli)
            self.assertEqual(callee["app"], "h2srv")
            callees.add(callee["txid"])
        self.assertEqual(len(callees), len(rows), "two rows linked to one callee")
        self.assertIn(first["callee_txid"], {t["txid"] for t in upgraded})

        # curl: its own rows (the libcurl hook), each linked — the upgraded request and stream 3.
        crows = calls(by_app["curl"][0])
        self.assertEqual([r["text"] for r in crows], urls)
        for r in crows:
            self.assert_linked(r, by_txid, by_app["curl"][0])

    def test_server_that_does_not_upgrade(self):
        self.port = port = free_port()
        with Collector(self.tmp) as col:
            self.spawn([PYTHON, os.path.join(self.tmp, "plain_server.py"), str(port)],
                       env=agent_env(col.endpoint, app="plain"))
            wait_port(port)
            out = self.run_ok([PYTHON, os.path.join(self.tmp, "plain_client.py"), str(port)],
                              agent_env(col.endpoint, app="plaincli", mode="process"))
            curl_out = self.run_ok(["curl", "-s", "--http2", f"http://127.0.0.1:{port}/a", f"http://127.0.0.1:{port}/b"],
                                   agent_env(col.endpoint, app="curl", mode="process"))
            wait_transactions(col.db, 4 + 2)
        self.assertEqual(out, "200 /first\n200 /second\n")
        self.assertEqual(curl_out, "/a\n/b\n")
        txs = show_json(col.db, "--last", "100")
        by_txid = {t["txid"]: t for t in txs}
        srv = sorted((t["name"], t["status"], t["error"]) for t in txs if t["app"] == "plain")
        self.assertEqual(srv, [("GET /a", 200, ""), ("GET /b", 200, ""), ("GET /first", 200, ""), ("GET /second", 200, "")])
        for t in txs:
            if t["app"] == "plain":
                self.assertNotIn("protocol", t["attributes"])
        for app, paths in (("plaincli", ["/first", "/second"]), ("curl", ["/a", "/b"])):
            client = [t for t in txs if t["app"] == app][0]
            rows = calls(client)
            self.assertEqual([r["text"] for r in rows], [f"http://127.0.0.1:{port}{p}" for p in paths])
            for r in rows:
                self.assertNotIn("upgrade", r["attributes"])
                self.assert_linked(r, by_txid, client)


if __name__ == "__main__":
    unittest.main()
