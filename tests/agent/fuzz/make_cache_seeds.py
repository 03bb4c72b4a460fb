#!/usr/bin/env python3
"""Seeds of the Redis, memcached and FastCGI fuzz targets.

Redis and memcached come from the captures of real clients and servers (tests/agent/protocols/{redis,
memcached}/captures/*.jsonl: one JSON line per chunk a recording proxy read, ["conn", ""] starting a
connection, [">", hex] a chunk the client wrote, ["<", hex] one the server answered), plus the answers a
real server gives the fixed pipelines of fuzz_redis_server.cpp and fuzz_memcached_server.cpp. FastCGI
comes from the same captures of nginx 1.22 talking to php-fpm 8.2 (tests/agent/fuzz/captures/
fastcgi_*.jsonl, made by capture_fastcgi.sh) and from records built here the way fcgi_bytes.h builds
them (1- and 4-byte lengths, multiplexed ids, FCGI_KEEP_CONN, ABORT_REQUEST, padding).

  <name>_conn    both directions as records [d|len_hi][len_lo][bytes], d = 0x80 for what the program
                 wrote (the client; for fastcgi_conn the application, php-fpm, which reads the requests)
  <name>_client  what the client wrote, one stream
  <name>_server  what the server answered, one stream

Run from anywhere; writes corpus/<target>/<capture>_<n>.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOLS = os.path.join(HERE, "..", "protocols")


def conversations(path):
    convs = []
    for line in open(path):
        d, h = json.loads(line)
        if d == "conn":
            convs.append([])
        else:
            convs[-1].append((d == ">", bytes.fromhex(h)))
    return [c for c in convs if c]


def records(chunks):
    """chunks: (program_wrote, bytes) in order -> the fuzz records format."""
    out = b""
    for wrote, b in chunks:
        for k in range(0, len(b), 0x7FFF):
            part = b[k:k + 0x7FFF]
            out += bytes([(0x80 if wrote else 0) | (len(part) >> 8), len(part) & 0xFF]) + part
    return out


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# Pipelines deeper than a transaction's 1,000 rows (TXRAY_MAX_STEPS): the rest folded into summary lines.
DEEP = {
    "redis": [(True, b"*1\r\n$1\r\nX\r\n" * 1010), (False, b":1\r\n" * 1010)],
    "memcached": [(True, b"mn\r\n" * 1100), (False, b"MN\r\n" * 1100)],
}


def cache_seeds(proto, extra_replies):
    caps = os.path.join(PROTOCOLS, proto, "captures")
    for fname in sorted(os.listdir(caps)):
        if not fname.endswith(".jsonl"):
            continue
        stem = fname[:-6]
        for i, conv in enumerate(conversations(os.path.join(caps, fname))):
            write(proto + "_conn", "%s_%d" % (stem, i), records(conv))
            write(proto + "_client", "%s_%d" % (stem, i), b"".join(b for w, b in conv if w))
            write(proto + "_server", "%s_%d" % (stem, i), b"".join(b for w, b in conv if not w))
    for name, data in extra_replies.items():
        write(proto + "_server", name, data)
    write(proto + "_conn", "deep_pipeline", records(DEEP[proto]))
    write(proto + "_client", "deep_pipeline", b"".join(b for w, b in DEEP[proto] if w))


def bulk(s):
    return b"$%d\r\n%s\r\n" % (len(s), s)


# What Redis 7.0 answers fuzz_redis_server.cpp's pipeline (PING, SELECT 2, GET, MULTI, SET, GET, EXEC,
# HGETALL, BLPOP, SUBSCRIBE news:1 news:2), in RESP2 and after HELLO 3, with messages after it.
REDIS_REPLIES = {
    "pipeline_resp2": b"+PONG\r\n+OK\r\n" + bulk(b"ann") + b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n" + bulk(b"x")
    + b"*4\r\n" + bulk(b"name") + bulk(b"ann") + bulk(b"age") + bulk(b"33")
    + b"*2\r\n" + bulk(b"list:9") + bulk(b"q")
    + b"*3\r\n" + bulk(b"subscribe") + bulk(b"news:1") + b":1\r\n*3\r\n" + bulk(b"subscribe") + bulk(b"news:2") + b":2\r\n"
    + b"*3\r\n" + bulk(b"message") + bulk(b"news:1") + bulk(b"m1"),
    "pipeline_resp3": b"+PONG\r\n+OK\r\n_\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n" + bulk(b"x")
    + b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n"
    + b"%2\r\n" + bulk(b"name") + bulk(b"ann") + bulk(b"age") + b":33\r\n"
    + b"*-1\r\n"
    + b">3\r\n" + bulk(b"subscribe") + bulk(b"news:1") + b":1\r\n>3\r\n" + bulk(b"subscribe") + bulk(b"news:2") + b":2\r\n"
    + b">3\r\n" + bulk(b"message") + bulk(b"news:1") + bulk(b"m1") + b">4\r\n" + bulk(b"pmessage") + bulk(b"n*")
    + bulk(b"news:2") + bulk(b"m2"),
    "errors": b"-ERR unknown command 'PING'\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    + b"-MOVED 3999 127.0.0.1:6381\r\n!21\r\nSYNTAX invalid syntax\r\n-ASK 3999 127.0.0.1:6381\r\n"
    + b"#t\r\n(3492890328409238509324850943850943825024385\r\n=15\r\ntxt:Some string\r\n~2\r\n:1\r\n:2\r\n",
}

# What memcached 1.6.18 answers fuzz_memcached_server.cpp's pipeline.
MEMCACHED_REPLIES = {
    "pipeline": b"VALUE item:42 0 11\r\nhello world\r\nVALUE item:43 0 1\r\nx\r\nEND\r\n"
    + b"VALUE item:42 0 11 5\r\nhello world\r\nEND\r\n"
    + b"STORED\r\nNOT_STORED\r\nDELETED\r\n15\r\nTOUCHED\r\n"
    + b"STAT items:1:number 1\r\nSTAT items:1:age 3\r\nEND\r\n"
    + b"VERSION 1.6.18\r\n"
    + b"VA 5 f0 t-1\r\nhello\r\n"
    + b"VA 5 s5 kmeta:5 Oab\r\nhello\r\n"
    + b"MN\r\n"
    + b"VA 2\r\n13\r\n",
    "errors": b"SERVER_ERROR out of memory storing object\r\nCLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n"
    + b"EN\r\nNF\r\nEX\r\nNS\r\n",
}


# FastCGI records (the FastCGI Specification 1.0), as nginx writes them and php-fpm answers.
def fcgi_record(typ, rid, content=b"", padding=None):
    if padding is None:
        padding = (8 - len(content) % 8) % 8
    return struct.pack(">BBHHBB", 1, typ, rid, len(content), padding, 0) + content + b"\0" * padding


def fcgi_len(n):
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def fcgi_pairs(pairs):
    return b"".join(fcgi_len(len(k)) + fcgi_len(len(v)) + k + v for k, v in pairs)


def fcgi_request(rid, method, uri, body=b"", keep=False, traceparent=None, long_value=False):
    pairs = [(b"QUERY_STRING", uri.split(b"?", 1)[1] if b"?" in uri else b""), (b"REQUEST_METHOD", method),
             (b"CONTENT_TYPE", b"application/x-www-form-urlencoded" if body else b""),
             (b"CONTENT_LENGTH", str(len(body)).encode() if body else b""), (b"SCRIPT_NAME", b"/index.php"),
             (b"REQUEST_URI", uri), (b"DOCUMENT_URI", b"/index.php"), (b"SERVER_PROTOCOL", b"HTTP/1.1"),
             (b"REMOTE_ADDR", b"127.0.0.1"), (b"HTTP_HOST", b"example.test"), (b"HTTP_USER_AGENT", b"curl/7.88.1")]
    if traceparent:
        pairs.append((b"HTTP_TRACEPARENT", traceparent))
        pairs.append((b"HTTP_TRACESTATE", b"congo=t61rcWkgMzE"))
    if long_value:
        pairs.append((b"HTTP_COOKIE", b"c" * 300))  # a 4-byte value length
        pairs.append((b"X_" + b"N" * 140, b"v"))   # a 4-byte name length
    out = fcgi_record(1, rid, bytes([0, 1, 1 if keep else 0, 0, 0, 0, 0, 0]), 0)
    p = fcgi_pairs(pairs)
    out += fcgi_record(4, rid, p[:100]) + fcgi_record(4, rid, p[100:]) + fcgi_record(4, rid, b"", 0)
    if body:
        out += fcgi_record(5, rid, body)
    return out + fcgi_record(5, rid, b"", 0)


def fcgi_answer(rid, status=None, body=b"<p>hello</p>", protocol_status=0):
    head = (b"Status: %d\r\n" % status if status else b"") + b"Content-type: text/html; charset=UTF-8\r\n\r\n"
    return (fcgi_record(6, rid, head + body) + fcgi_record(7, rid, b"PHP Notice: x\n") + fcgi_record(6, rid, b"", 0)
            + fcgi_record(3, rid, bytes([0, 0, 0, 0, protocol_status, 0, 0, 0]), 0))


TP = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def fcgi_built():
    """Conversations as (front wrote, bytes): the front (nginx) writes requests, reads answers."""
    return {
        "get": [(True, fcgi_request(1, b"GET", b"/index.php?user=alice")), (False, fcgi_answer(1))],
        "post_traced": [(True, fcgi_request(1, b"POST", b"/form.php", body=b"a=1&b=2", traceparent=TP)),
                        (False, fcgi_answer(1, status=404))],
        "keep_conn_two": [(True, fcgi_request(1, b"GET", b"/a.php", keep=True)), (False, fcgi_answer(1)),
                          (True, fcgi_request(1, b"GET", b"/b.php", keep=True, long_value=True)),
                          (False, fcgi_answer(1, status=503))],
        "multiplexed": [(True, fcgi_request(1, b"GET", b"/one.php", keep=True) + fcgi_request(2, b"GET", b"/two.php", keep=True)),
                        (False, fcgi_answer(2) + fcgi_answer(1, protocol_status=2))],
        "abort": [(True, fcgi_request(3, b"GET", b"/slow.php")), (True, fcgi_record(2, 3, b"", 0)),
                  (False, fcgi_answer(3, status=500))],
        # more requests at once on one connection than the trackers follow (16), then their answers
        "multiplexed_19": [(True, fcgi_request(i, b"GET", b"/p%d.php" % i, keep=True)) for i in range(1, 20)]
        + [(False, b"".join(fcgi_answer(i) for i in range(19, 0, -1)))],
        "get_values": [(True, fcgi_record(9, 0, fcgi_pairs([(b"FCGI_MAX_CONNS", b""), (b"FCGI_MPXS_CONNS", b"")]))),
                       (False, fcgi_record(10, 0, fcgi_pairs([(b"FCGI_MAX_CONNS", b"10"), (b"FCGI_MPXS_CONNS", b"0")])))],
    }


def fastcgi_seeds():
    convs = dict(fcgi_built())
    caps = os.path.join(HERE, "captures")
    if os.path.isdir(caps):
        for fname in sorted(os.listdir(caps)):
            if fname.startswith("fastcgi_") and fname.endswith(".jsonl"):
                for i, conv in enumerate(conversations(os.path.join(caps, fname))):
                    convs["%s_%d" % (fname[:-6], i)] = conv
    for name, conv in convs.items():
        # fastcgi_client: the program is the front (it wrote the requests)
        write("fastcgi_client", name, records(conv))
        # fastcgi_conn: the program is the application (it wrote the answers)
        write("fastcgi_conn", name, records([(not w, b) for w, b in conv]))


cache_seeds("redis", REDIS_REPLIES)
cache_seeds("memcached", MEMCACHED_REPLIES)
fastcgi_seeds()
