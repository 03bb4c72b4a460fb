#!/usr/bin/env python3
"""Writes the seed corpora of the PostgreSQL wire client's fuzz targets from the real drivers' captures
(tests/agent/protocols/pg/captures/, made by capture.py there):
  corpus/pg_conn/<capture>      both directions as records ([d|len_hi][len_lo][bytes], fuzz_pg_common.h)
  corpus/pg_frontend/<capture>  what the driver wrote, as one stream
  corpus/pg_backend/<capture>   what the server answered (to another conversation than the target's
                                fixed one: the framing and the stops), and `answers`: the right answers
                                to the target's fixed conversation (fuzz_pg_backend.cpp)
"""
import glob
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CAPS = os.path.join(HERE, "../protocols/pg/captures")


def msg(t, body):
    return t.encode() + struct.pack(">I", len(body) + 4) + body


def z(s):
    return s.encode() + b"\0"


def main():
    for d in ("pg_conn", "pg_frontend", "pg_backend"):
        os.makedirs(os.path.join(HERE, "corpus", d), exist_ok=True)
    for path in sorted(glob.glob(os.path.join(CAPS, "*.txt"))):
        name = os.path.basename(path)[:-4]
        chunks = [(l.split()[0] == ">", bytes.fromhex(l.split()[1])) for l in open(path) if l.strip()]
        recs = b""
        for sent, data in chunks:
            for i in range(0, len(data), 0x7FFF):
                part = data[i:i + 0x7FFF]
                recs += bytes([(0x80 if sent else 0) | len(part) >> 8, len(part) & 0xFF]) + part
        open(os.path.join(HERE, "corpus/pg_conn", name), "wb").write(recs)
        open(os.path.join(HERE, "corpus/pg_frontend", name), "wb").write(b"".join(d for s, d in chunks if s))
        open(os.path.join(HERE, "corpus/pg_backend", name), "wb").write(b"".join(d for s, d in chunks if not s))
    ready = msg("Z", b"I")
    answers = (msg("R", struct.pack(">I", 3)) + msg("R", struct.pack(">I", 0)) + msg("S", z("server_version") + z("15"))
               + msg("K", struct.pack(">II", 1, 2)) + ready
               + msg("T", struct.pack(">H", 0)) + msg("D", struct.pack(">HI", 1, 1) + b"1") + msg("C", z("SELECT 1"))
               + msg("N", b"SNOTICE\0C00000\0Mhi\0\0") + msg("C", z("UPDATE 1")) + ready
               + msg("1", b"") + msg("2", b"") + msg("T", struct.pack(">H", 0)) + msg("D", struct.pack(">H", 0))
               + msg("C", z("SELECT 1")) + msg("1", b"") + msg("2", b"") + msg("n", b"") + msg("C", z("INSERT 0 1"))
               + ready + msg("1", b"") + msg("t", struct.pack(">HI", 1, 25)) + msg("n", b"")
               + msg("2", b"") + msg("D", struct.pack(">H", 0)) + msg("D", struct.pack(">H", 0)) + msg("s", b"") + ready
               + msg("G", struct.pack(">bH", 0, 0)) + msg("A", struct.pack(">I", 7) + z("chan") + z("x"))
               + msg("C", z("COPY 1")) + ready)
    open(os.path.join(HERE, "corpus/pg_backend/answers"), "wb").write(answers)
    err = msg("E", b"SERROR\0VERROR\0C42P01\0Mno such table\0\0")
    open(os.path.join(HERE, "corpus/pg_backend/error_in_pipeline"), "wb").write(
        answers[:answers.index(b"1\0\0\0\x04")] + msg("1", b"") + msg("2", b"") + err + ready)


if __name__ == "__main__":
    main()
