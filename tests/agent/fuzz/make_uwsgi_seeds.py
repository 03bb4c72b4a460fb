#!/usr/bin/env python3
"""Writes the seed corpora of the uwsgi fuzz targets from captures of nginx's uwsgi_pass talking to
Debian's uWSGI (`--socket`, a WSGI app; tests/agent/protocols/uwsgi/captures/*.bin, one connection each,
records [d][len_hi][len_lo][bytes], d = 1 what nginx wrote, 0 what uWSGI answered), plus packets one
after another on one connection, a body sent by sendfile and a packet whose datasize leaves no room for
the trace context:
  corpus/uwsgi_conn/<capture>    uWSGI's side: reads and writes as records (fuzz_uwsgi_common.h)
  corpus/uwsgi_client/<capture>  nginx's side: the kernel's cap byte, then its writes and reads
"""
import glob
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CAPS = os.path.join(HERE, "../protocols/uwsgi/captures")


def read_capture(path):
    data, out, i = open(path, "rb").read(), [], 0
    while i + 3 <= len(data):
        n = data[i + 1] << 8 | data[i + 2]
        out.append((data[i] == 1, data[i + 3:i + 3 + n]))
        i += 3 + n
    return out


def record(kind, b):
    out = b""
    for k in range(0, max(len(b), 1), 0x3fff):  # 14-bit lengths
        part = b[k:k + 0x3fff]
        out += bytes([kind << 6 | len(part) >> 8, len(part) & 0xff]) + part
    return out


def var(k, v):
    return struct.pack("<H", len(k)) + k + struct.pack("<H", len(v)) + v


def packet(vars_, body=b""):
    block = b"".join(var(k, v) for k, v in vars_)
    return b"\0" + struct.pack("<H", len(block)) + b"\0" + block + body


def nginx_vars(method, uri, length=0):
    path = uri.split(b"?")[0]
    return [(b"QUERY_STRING", uri.partition(b"?")[2]), (b"REQUEST_METHOD", method), (b"CONTENT_TYPE", b""),
            (b"CONTENT_LENGTH", str(length).encode() if length else b""), (b"REQUEST_URI", uri),
            (b"PATH_INFO", path), (b"SERVER_PROTOCOL", b"HTTP/1.1"), (b"HTTP_HOST", b"localhost")]


def conversations():
    for path in sorted(glob.glob(os.path.join(CAPS, "*.bin"))):
        yield os.path.basename(path)[:-4], read_capture(path)
    # packets one after another on one connection, answers framed by Content-Length
    conv = []
    for i in range(3):
        body = b"x" * i
        conv.append((True, packet(nginx_vars(b"POST", b"/k/%d?a=%d" % (i, i), len(body)), body)))
        conv.append((False, b"HTTP/1.1 20%d OK\r\nContent-Length: 2\r\n\r\nok" % i))
    yield "synthetic-sequence", conv
    # a POST whose body nginx sends by sendfile (a body it buffered in a file, `sendfile on`): the front's
    # side sees it as a kind-3 record of 100 bytes (fuzz_uwsgi_client.cpp counts 7 per byte)
    yield "synthetic-sendfile-body", [(True, packet(nginx_vars(b"POST", b"/up", 700))), ("sendfile", 100),
                                      (False, b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")]
    # a datasize with no room for HTTP_TRACEPARENT's 75 bytes, the packet cut after 2000 bytes (the
    # targets' inputs are at most 16 KiB; the header alone decides)
    pad = 0xffff - 20 - len(b"".join(var(k, v) for k, v in nginx_vars(b"GET", b"/full")))
    yield "synthetic-full-datasize", [(True, packet(nginx_vars(b"GET", b"/full") + [(b"HTTP_X_PAD", b"p" * pad)])[:2000])]


def main():
    for d in ("uwsgi_conn", "uwsgi_client"):
        os.makedirs(os.path.join(HERE, "corpus", d), exist_ok=True)
    for name, conv in conversations():
        # the server's side: it reads what the front wrote, writes its answer; then the connection ends
        server = b"".join(record(0, b"F" * (7 * b)) if front == "sendfile" else record(0 if front else 1, b)
                          for front, b in conv) + record(2, b"")
        # the front's side: a kernel that takes 13 bytes a call, its writes and reads, the server's close
        client = bytes([13]) + b"".join(record(3, b"F" * b) if front == "sendfile" else record(1 if front else 0, b)
                                        for front, b in conv) + record(2, b"")
        for d, data in (("uwsgi_conn", server), ("uwsgi_client", client)):
            with open(os.path.join(HERE, "corpus", d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
