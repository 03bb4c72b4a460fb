#!/usr/bin/env python3
"""Seeds of the MySQL fuzz targets from the captures of real drivers (tests/agent/protocols/mysql/captures/:
a record per recv() of a logging proxy: 'C' or 'S', a 4-byte little-endian length, the bytes).

mysql_conn: the whole conversation as fuzz records ([d|len_hi][len_lo][bytes], d = 0x80 for client bytes);
mysql_client / mysql_server: one direction's bytes after the handshake (the targets replay a handshake of
their own first). Run from anywhere; writes corpus/mysql_*/<capture>."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CAPS = os.path.join(HERE, "..", "protocols", "mysql", "captures")


def records(path):
    d = open(path, "rb").read()
    i = 0
    while i + 5 <= len(d):
        n = struct.unpack("<I", d[i + 1:i + 5])[0]
        yield d[i:i + 1] == b"C", d[i + 5:i + 5 + n]
        i += 5 + n


for name in sorted(os.listdir(CAPS)):
    if not name.endswith(".cap"):
        continue
    stem = name[:-4]
    recs = list(records(os.path.join(CAPS, name)))
    conn = b""
    for sent, b in recs:
        for k in range(0, len(b), 0x7fff):
            part = b[k:k + 0x7fff]
            conn += bytes([(0x80 if sent else 0) | (len(part) >> 8), len(part) & 0xff]) + part
    # After the handshake: the third record on is the first command (greeting, response, OK).
    client = b"".join(b for sent, b in recs[3:] if sent)
    server = b"".join(b for sent, b in recs[3:] if not sent)
    for target, data in (("mysql_conn", conn), ("mysql_client", client), ("mysql_server", server)):
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, stem), "wb") as f:
            f.write(data)
