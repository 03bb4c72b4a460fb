"""traceparent into HTTP/2 over TLS when OpenSSL has to retry (issue 16): the agent writes the program's
plaintext with the fields from a buffer of its own (agent/hooks/ssl_hooks.cpp: h2_tls_write), and a
non-blocking write that fails with WANT_WRITE must be continued by the program's retry without the
program noticing anything.

A Python client (the ssl module, OpenSSL 3, ALPN h2, under the agent in process mode) on a non-blocking
socket with a small send buffer writes, in ONE send: the preface, SETTINGS, a HEADERS frame (stream 1,
POST /big), 2 MiB of DATA frames, and a HEADERS frame (stream 3, GET /after); the server (no agent)
sleeps before reading, so the write fails with SSLWantWriteError many times and is retried. Checked:
  - the program's byte counts are its own (the send returns the length of what it offered, and the
    retries offer the same bytes), it saw WANT_WRITE at least once;
  - the server receives every DATA byte intact, and both HEADERS blocks decode (an independent HPACK
    decoder, python3-hpack) to the program's fields plus one traceparent each: the client's trace id and
    the span ids of its two rows;
  - the rows: two HTTP_CALLs, status 200, protocol h2.
"""
import json
import os
import subprocess
import textwrap
import unittest

from txraytest import (PYTHON, Collector, TxrayTestCase, agent_env, free_port, show_json, wait_for,
                       wait_transactions)

SERVER = textwrap.dedent("""
    import json, socket, ssl, struct, sys, time
    import hpack
    port, cert, key, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2"])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    srv.bind(("127.0.0.1", port))
    srv.listen(4)
    print("listening", flush=True)
    raw, _ = srv.accept()
    s = ctx.wrap_socket(raw, server_side=True)
    time.sleep(1.5)  # the client's write fills the buffers meanwhile
    buf = b""
    def need(n):
        global buf
        while len(buf) < n:
            d = s.recv(1 << 16)
            if not d:
                raise SystemExit("eof")
            buf += d
    need(24)
    assert buf[:24] == b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"
    buf = buf[24:]
    dec = hpack.Decoder()
    enc = hpack.Encoder()
    seen = {"headers": {}, "data": 0, "data_ok": True}
    ended = set()
    while ended != {1, 3}:
        need(9)
        ln = int.from_bytes(buf[:3], "big")
        typ, flags, sid = buf[3], buf[4], struct.unpack(">I", buf[5:9])[0] & 0x7fffffff
        need(9 + ln)
        payload, buf = buf[9:9 + ln], buf[9 + ln:]
        if typ == 1:
            seen["headers"][str(sid)] = [[k.decode() if isinstance(k, bytes) else k,
                                          v.decode() if isinstance(v, bytes) else v] for k, v in dec.decode(payload)]
        elif typ == 0:
            seen["data"] += len(payload)
            seen["data_ok"] &= sid == 1 and payload == bytes(len(payload))
        if typ in (0, 1) and flags & 1:
            ended.add(sid)
    frames = b"\\x00\\x00\\x00\\x04\\x00\\x00\\x00\\x00\\x00"
    for sid in (1, 3):
        block = enc.encode([(":status", "200")])
        frames += len(block).to_bytes(3, "big") + bytes([1, 5]) + sid.to_bytes(4, "big") + block
    s.sendall(frames)
    with open(out, "w") as f:
        json.dump(seen, f)
    time.sleep(0.5)
    s.close()
""")

CLIENT = textwrap.dedent("""
    import select, socket, ssl, sys
    import hpack
    port, ca = int(sys.argv[1]), sys.argv[2]
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["h2"])
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    assert s.selected_alpn_protocol() == "h2"
    enc = hpack.Encoder()
    def frame(typ, flags, sid, payload):
        return len(payload).to_bytes(3, "big") + bytes([typ, flags]) + sid.to_bytes(4, "big") + payload
    out = b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n" + frame(4, 0, 0, b"")
    out += frame(1, 4, 1, enc.encode([(":method", "POST"), (":path", "/big"), (":scheme", "https"),
                                      (":authority", "127.0.0.1:%d" % port), ("content-type", "application/x-test")]))
    chunks = 128
    for i in range(chunks):
        out += frame(0, 1 if i == chunks - 1 else 0, 1, bytes(16384))
    out += frame(1, 5, 3, enc.encode([(":method", "GET"), (":path", "/after"), (":scheme", "https"),
                                      (":authority", "127.0.0.1:%d" % port), ("user-agent", "retry-test")]))
    s.setblocking(False)
    sent, wants, calls = 0, 0, 0
    while sent < len(out):
        try:
            n = s.send(out[sent:])
            calls += 1
            sent += n
        except ssl.SSLWantWriteError:
            wants += 1
            select.select([], [s], [], 5)
        except ssl.SSLWantReadError:
            wants += 1
            select.select([s], [], [], 5)
    s.setblocking(True)
    got = b""
    while got.count(bytes([1, 5])) < 2:
        d = s.recv(1 << 16)
        if not d:
            break
        got += d
    print("offered", len(out), "sent", sent, "calls", calls, "wants", "some" if wants else "none")
""")


class H2TlsRetryTest(TxrayTestCase):
    def test_fields_survive_want_write_retries(self):
        cert, key = os.path.join(self.tmp, "cert.pem"), os.path.join(self.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
        for name, text in (("server.py", SERVER), ("client.py", CLIENT)):
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)
        port = free_port()
        seen_file = os.path.join(self.tmp, "seen.json")
        with Collector(self.tmp) as col:
            log = open(os.path.join(self.tmp, "server.log"), "w+")
            self.addCleanup(log.close)
            srv = self.spawn([PYTHON, os.path.join(self.tmp, "server.py"), str(port), cert, key, seen_file],
                             stdout=log, stderr=subprocess.STDOUT)
            wait_for(lambda: (log.seek(0), "listening" in log.read())[1], 20, what="server listening")
            r = subprocess.run([PYTHON, os.path.join(self.tmp, "client.py"), str(port), cert],
                               env=agent_env(col.endpoint, app="retry", mode="process"),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            srv.wait(20)
            wait_transactions(col.db, 1)
        words = r.stdout.split()
        self.assertEqual(words[1], words[3], f"the program's byte count changed: {r.stdout}")
        self.assertEqual(words[7], "some", f"no WANT_WRITE: the test did not test the retry: {r.stdout}")
        with open(seen_file) as f:
            seen = json.load(f)
        self.assertEqual(seen["data"], 128 * 16384)
        self.assertTrue(seen["data_ok"])
        tx = show_json(col.db, "--last", "10")[0]
        rows = [s for s in tx["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(len(rows), 2, rows)
        span_by_path = {r["text"].rsplit("/", 1)[1]: r["span_id"] for r in rows}
        for r in rows:
            self.assertEqual(r["status"], 200)
            self.assertEqual(r["attributes"]["protocol"], "h2")
        for sid, path, extra in (("1", "big", ("content-type", "application/x-test")),
                                 ("3", "after", ("user-agent", "retry-test"))):
            fields = seen["headers"][sid]
            tps = [v for k, v in fields if k == "traceparent"]
            self.assertEqual(len(tps), 1, fields)
            _, trace, parent, _ = tps[0].split("-")
            self.assertEqual(trace, tx["trace_id"])
            self.assertEqual(parent, span_by_path[path])
            self.assertEqual([f for f in fields if f[0] != "traceparent"][:4],
                             [[":method", "POST" if path == "big" else "GET"], [":path", "/" + path],
                              [":scheme", "https"], [":authority", f"127.0.0.1:{port}"]])
            self.assertIn(list(extra), fields)


if __name__ == "__main__":
    unittest.main()
