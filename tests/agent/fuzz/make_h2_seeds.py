#!/usr/bin/env python3
"""Writes the seed corpora of the HTTP/2 fuzz targets: corpus/h2_frames/ (the record format of
fuzz_h2_frames.cpp: a mode byte, then [op][len hi][len lo][bytes] records) with a gRPC unary call, a
server-streaming call, a failing call, many streams interleaved, a request split in CONTINUATIONs, a
reset stream and a connection joined mid-stream. HPACK: static-table indexes and literals (without
indexing and with incremental indexing, so the dynamic table is exercised)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def lit(name, value, index=False):  # literal, new name; 0x40 = with incremental indexing, 0x00 = without
    n, v = name.encode(), value.encode()
    return bytes([0x40 if index else 0x00, len(n)]) + n + bytes([len(v)]) + v


def request(path, idx=False):
    return (b"\x83\x86" + lit(":path", path, idx) + lit(":authority", "127.0.0.1:50051", idx)
            + lit("content-type", "application/grpc", idx) + lit("te", "trailers"))


def response_head():
    return b"\x88" + lit("content-type", "application/grpc")


def trailers(status, msg=""):
    t = lit("grpc-status", str(status))
    if msg:
        t += lit("grpc-message", msg)
    return t


def msg(body):
    return b"\x00" + struct.pack(">I", len(body)) + body


SETTINGS = frame(4, 0, 0, b"")
ACK = frame(4, 1, 0, b"")


def call(stream, path, status=0, n_msgs=1, idx=False):
    req = frame(1, 4, stream, request(path, idx)) + frame(0, 1, stream, msg(b"key"))
    resp = frame(1, 4, stream, response_head())
    for i in range(n_msgs):
        resp += frame(0, 0, stream, msg(b"row %d" % i))
    resp += frame(1, 5, stream, trailers(status, "back is broken" if status else ""))
    return req, resp


def records(*recs):
    out = b""
    for op, data in recs:
        out += bytes([op]) + struct.pack(">H", len(data)) + data
    return out


def write(name, mode, recs):
    for target in ("h2_frames",):
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "seed_" + name), "wb") as f:
            f.write(bytes([mode]) + records(*recs))


def both(name, recs_client_view, mode=2):
    """recs as the client sees them (op 1 = client writes); the server's view swaps read and write.
    mode 0x80: the connection starts as HTTP/1.1 (Upgrade: h2c), no preface put first."""
    write(name + "_client", mode, recs_client_view)
    write(name + "_server", mode | 1, [(0 if op == 1 else 1 if op == 0 else op, d) for op, d in recs_client_view])


req, resp = call(1, "/demo.Back/Get", idx=True)
both("unary", [(1, SETTINGS), (0, SETTINGS + ACK), (1, ACK + req), (0, resp)])
req, resp = call(1, "/demo.Back/List", n_msgs=4)
both("stream", [(1, SETTINGS + req), (0, SETTINGS + resp)])
req, resp = call(1, "/demo.Back/Fail", status=13)
both("fail", [(1, SETTINGS + req), (0, resp), (2, b"")])
reqs, resps = b"", b""
for s in range(1, 44, 2):
    q, r = call(s, "/demo.Back/Get", idx=True)
    reqs += q
    resps = r + resps
both("many", [(1, SETTINGS + reqs), (0, resps)])
block = request("/demo.Back/Get")
cont = frame(1, 0, 1, block[:7]) + frame(9, 0, 1, block[7:20]) + frame(9, 4, 1, block[20:]) + frame(0, 1, 1, msg(b"k"))
both("continuation", [(1, SETTINGS + cont), (0, frame(3, 0, 1, struct.pack(">I", 8)))])
req, resp = call(1, "/demo.Back/Get")
both("midstream", [(1, req[5:]), (0, resp)])
both("garbage", [(1, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), (0, b"HTTP/1.1 200 OK\r\n\r\n")])

# HTTP/1.1 Upgrade: h2c (RFC 7540 §3.2): the request, 101, then HTTP/2 with the response on stream 1.
UPGRADE = (b"GET /up HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
           b"HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
SWITCH = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
stream1 = frame(1, 4, 1, b"\x88") + frame(0, 1, 1, b"hello")
get3 = frame(1, 5, 3, b"\x82\x86" + lit(":path", "/next") + lit(":authority", "127.0.0.1"))
resp3 = frame(1, 4, 3, b"\x88") + frame(0, 1, 3, b"next")
both("upgrade", [(1, UPGRADE), (0, SWITCH + SETTINGS + stream1), (1, PREFACE + SETTINGS + ACK + get3), (0, resp3)],
     mode=0x80)
both("upgrade_garbage", [(1, UPGRADE), (0, SWITCH + b"HTTP/1.1 200 OK\r\n\r\n"), (1, PREFACE + b"junk" * 8)], mode=0x80)
both("upgrade_refused", [(1, UPGRADE), (0, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
                         (1, b"GET /again HTTP/1.1\r\nHost: x\r\n\r\n"), (0, b"HTTP/1.1 204 No Content\r\n\r\n")],
     mode=0x80)
