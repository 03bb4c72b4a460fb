#!/usr/bin/env python3
"""Writes the seed corpora of the agent's fuzz targets (corpus/<target>/) from real traffic examples.

The harnesses read their input with libFuzzer's FuzzedDataProvider: strings from the front
(ConsumeRandomLengthString: a backslash doubled is a backslash, a backslash and any other byte ends the
string), integers from the back (one byte per 8 bits of range, last byte first). Run it again after
changing what a harness reads; it overwrites the seed_* files and leaves the others (crash reproducers)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class Input:
    def __init__(self):
        self.front = bytearray()
        self.back = bytearray()  # in consumption order; reversed at the end

    def string(self, s):
        b = s.encode() if isinstance(s, str) else bytes(s)
        self.front += b.replace(b"\\", b"\\\\") + b"\\x"
        return self

    def int(self, value, lo, hi):
        rng, nbytes = hi - lo, 0
        while nbytes < 8 and (rng >> (8 * nbytes)) > 0:
            nbytes += 1
        v = value - lo
        # FuzzedDataProvider builds result = (result << 8) | next byte from the end, then lo + result % (rng + 1)
        for i in reversed(range(nbytes)):
            self.back.append((v >> (8 * i)) & 0xFF)
        return self

    def boolean(self, b):
        self.back.append(1 if b else 0)
        return self

    def rest(self, s):
        self.tail = s.encode() if isinstance(s, str) else bytes(s)
        return self

    def bytes(self):
        return bytes(self.front) + getattr(self, "tail", b"") + bytes(reversed(self.back))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed_" + name), "wb") as f:
        f.write(data)


REQ_GET = "GET /api/orders?id=42&page=2 HTTP/1.1\r\nHost: shop.local:8080\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n"
REQ_POST_CHUNKED = "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
REQ_POST_LEN = "POST /form HTTP/1.0\r\nContent-Length: 7\r\nConnection: keep-alive\r\n\r\na=1&b=2"
REQ_HEAD = "HEAD /index.html HTTP/1.1\r\nHost: h\r\n\r\n"
RESP_LEN = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"ok\": true}\n"
RESP_CHUNKED = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n"
RESP_HEAD = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
RESP_CLOSE = "HTTP/1.0 500 Internal Server Error\r\nConnection: close\r\n\r\nboom"
RESP_204 = "HTTP/1.1 204 No Content\r\n\r\n"
RESP_101 = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello"


def pieces(inp, sizes):
    inp.int(len(sizes), 0, 6)
    for s in sizes:
        inp.int(s, 1, 40)


def inbound():
    kinds = "rrwwoc"
    def conn(name, ops, sizes):
        inp = Input()
        pieces(inp, sizes)
        inp.int(3, 0, 3)
        for kind, arg in ops:
            inp.int(kinds.index(kind), 0, 5)
            if kind in "rw":
                inp.string(arg)
            elif kind == "o":
                inp.int(arg, 0, 4096)
        write("http_inbound", name, inp.bytes())
    conn("keepalive", [("r", REQ_GET), ("w", RESP_LEN), ("r", REQ_POST_CHUNKED), ("w", RESP_CHUNKED), ("c", None)], [1, 7, 3])
    conn("pipelined", [("r", REQ_GET + REQ_HEAD + REQ_POST_LEN), ("w", RESP_LEN + RESP_HEAD + RESP_CLOSE), ("c", None)], [13])
    conn("sendfile", [("r", REQ_GET), ("w", RESP_HEAD), ("o", 1234), ("r", REQ_HEAD), ("w", RESP_204), ("c", None)], [])
    conn("upgrade", [("r", "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"), ("w", RESP_101), ("c", None)], [5, 1])
    conn("not_http", [("r", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), ("w", "\x16\x03\x03"), ("c", None)], [2])
    for i, (what, text, head_req, mode, length) in enumerate([
            (0, REQ_GET, False, 0, 0), (0, REQ_POST_CHUNKED, False, 0, 0),
            (1, "5\r\nhello\r\n0\r\n\r\nNEXT", False, 2, 0), (1, "0123456789NEXT", False, 1, 10),
            (2, RESP_CHUNKED + "NEXT", False, 0, 0), (2, RESP_HEAD, True, 0, 0), (2, RESP_CLOSE, False, 0, 0)]):
        inp = Input()
        pieces(inp, [3, 1])
        inp.int(what, 0, 3).boolean(head_req).int(mode, 0, 3).boolean(True).int(length, 0, 300).rest(text)
        write("http_inbound", f"part{i}", inp.bytes())


def outbound():
    kinds = "ssrrrioe"
    def conn(name, ops, sizes):
        inp = Input()
        pieces(inp, sizes)
        for kind, arg in ops:
            inp.int(kinds.index(kind), 0, 7)
            if kind in "sri":
                inp.string(arg)
            elif kind == "o":
                inp.int(arg, 0, 4096)
            elif kind == "e":
                inp.boolean(arg)
        write("http_outbound", name, inp.bytes())
    conn("keepalive", [("i", REQ_GET), ("r", RESP_LEN), ("s", REQ_POST_CHUNKED), ("r", RESP_CHUNKED), ("e", False)], [2, 9])
    conn("pipelined", [("s", REQ_GET + REQ_HEAD), ("s", REQ_POST_LEN), ("r", RESP_LEN + RESP_HEAD + RESP_CLOSE), ("e", False)], [11])
    conn("sendfile", [("s", "PUT /blob HTTP/1.1\r\nContent-Length: 100\r\n\r\n"), ("o", 100), ("r", RESP_204), ("e", True)], [])
    conn("connect", [("s", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"), ("r", "HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x03"), ("e", False)], [4])
    conn("redis", [("s", "GET key\r\n"), ("r", "$5\r\nvalue\r\n"), ("e", False)], [])


def inject():
    for i, req in enumerate([REQ_GET, REQ_POST_LEN]):
        inp = Input().string(req)
        n = len(req)
        inp.int(n, 0, n).int(2, 0, 6).int(16, 0, n)  # one write, two iovecs cut at 16
        line = "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
        at = req.index("\n") + 1
        inp.boolean(True).int(at, 0, n + 2).string(line)
        inp.int(1, 0, 15).int(30, 0, n + len(line))  # the kernel takes 30 bytes
        write("http_inject", f"request{i}", inp.bytes())


def hints():
    for i, m in enumerate(["Hnode", "R12:3", "E12:00000000000000ff", "L", "O7:12:00000000000000ff", "C", "C12:0000000000000001",
                           "A0000000000000002", "D0000000000000002", "Hpython\x00junk", "B4096", "U"]):
        write("hint_protocol", str(i), m.encode())


def binds():
    inp = Input()
    inp.int(64, 8, 128).boolean(False).int(3, 0, 40)
    for idx, typ, val in [(1, 2, "42"), (2, 4, "it's"), (70, 1, "")]:
        inp.boolean(True).int(idx, -2, 70).int(typ, 0, 8).string(val).boolean(True).int(5, 0, 15)
    inp.int(3, 0, 80)
    for fmt, val in [(0, "bob"), (1, "\x00\x01"), (0, None)]:
        inp.int(fmt, 0, 1)
        if val is None:
            inp.int(0, 0, 7)
        else:
            inp.int(1, 0, 7).string(val)
    inp.boolean(True).boolean(True).rest("naïve 'quoted' value")
    write("sql_binds", "mixed", inp.bytes())


def zmtp():
    def greeting(mech):
        g = bytearray(64)
        g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 0
        g[12:12 + len(mech)] = mech
        g[32] = 1  # as-server
        return bytes(g)

    def command(body):
        return (bytes([0x04, len(body)]) if len(body) <= 255 else bytes([0x06]) + len(body).to_bytes(8, "big")) + body

    def ready(socket_type):
        return command(b"\x05READY" + bytes([11]) + b"Socket-Type" + len(socket_type).to_bytes(4, "big") + socket_type)

    for name, curve, answer in [
            ("null_pull", False, greeting(b"NULL") + ready(b"PULL")),
            ("null_push", False, greeting(b"NULL") + ready(b"PUSH")),
            ("null_error", False, greeting(b"NULL") + command(b"\x05ERROR\x0cno such peer")),
            ("null_v2", False, greeting(b"NULL")[:10] + b"\x01" + greeting(b"NULL")[11:]),
            ("curve_as_null", True, greeting(b"NULL") + ready(b"PULL")),
            ("curve_welcome", True, greeting(b"CURVE") + command(b"\x07WELCOME" + bytes(160))),
            ("http", False, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")]:
        write("zmtp_handshake", name, Input().boolean(curve).rest(answer).bytes())


def tracestate():
    """fuzz_tracestate: (traceparent, how many lines of it, tracestate lines, baggage lines, span, skip)."""
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    cases = {
        "two_vendors": (tp, 1, ["vendor1=a,vendor2=b"], ["userId=alice,isProduction=false"], 0),
        "lines_and_empties": (tp, 1, ["foo=1", "", " , bar=2 ,baz=3"], ["a=1", "b=2"], 0),
        "tenant_keys": ("cc" + tp[2:] + "-future", 1, ["tenant@vendor=1,0t@v=2,z" + "z" * 255 + "=v"], [], 1),
        "duplicated_traceparent": (tp, 2, ["vendor1=a"], ["k=v"], 2),
        "broken_list": (tp, 1, ["foo=1,Bar=2", "foo=3"], [], 4),
        "long_list": (tp[:-2] + "03", 1, ["a=1,big=" + "x" * 196 + "," + ",".join(f"m{i}=" + "v" * 10 for i in range(30))],
                      ["b" * 1025], 7),
    }
    for name, (t, ntp, ts, bg, skip) in cases.items():
        inp = Input().int(len(ts), 0, 4).int(len(bg), 0, 3).string(t).int(ntp, 0, 2)
        for line in ts + bg:
            inp.string(line)
        inp.int(0x1122334455667788, 0, 2**64 - 1).int(skip, 0, 7)
        write("tracestate", name, inp.bytes())


if __name__ == "__main__":
    tracestate()
    zmtp()
    inbound()
    outbound()
    inject()
    hints()
    binds()
    sys.exit(0)
