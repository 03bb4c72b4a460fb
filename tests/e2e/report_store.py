"""A small txray store with known content for the report's end-to-end tests (schema.sql + inserts).

Besides ordinary traffic it holds an N+1 transaction whose name and SQL text carry HTML/JS payloads,
so that the rendered reports can be checked for escaping, and cache commands: a Redis GET per ordinary
transaction (every 4th a miss) with 100 more folded into a summary, memcached gets (one miss, one error).
"""
import os
import sqlite3

from txraytest import SOURCE_DIR

MS = 1_000_000
BASE = 1_764_410_400 * 1_000_000_000  # 2025-11-29T10:00:00Z
EVIL_NAME = 'GET /<script>document.title="INJECTED"</script>'
EVIL_SQL = "SELECT * FROM items WHERE note = '<img src=x onerror=alert(1)>' AND id = ?"
EVIL_CACHE = "GET <img src=y onerror=alert(2)>:?"


def build(path, plain=40):
    """Writes the store; returns the list of response times in ms (in insertion order)."""
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE_DIR, "collector", "store", "schema.sql")) as f:
        db.executescript(f.read())
    db.execute("INSERT INTO agents(id, instance_id, app) VALUES (1, 11, 'shop')")
    db.execute("INSERT INTO texts(id, hash, text) VALUES (1, 1, 'SELECT * FROM orders WHERE id = ?')")
    db.execute("INSERT INTO texts(id, hash, text) VALUES (2, 2, ?)", (EVIL_SQL,))
    db.execute("INSERT INTO texts(id, hash, text) VALUES (3, 3, 'GET item:?')")
    db.execute("INSERT INTO texts(id, hash, text) VALUES (4, 4, 'get sess:?')")
    db.execute("INSERT INTO texts(id, hash, text) VALUES (5, 5, ?)", (EVIL_CACHE,))
    elapsed = []

    def tx(tid, name, start_ms, ms, sql_ms=0, error=None, status=200):
        db.execute(
            "INSERT INTO transactions(id, txid, agent_id, app, name, kind, start_unix_ns, end_unix_ns, elapsed_ns, "
            "cpu_ns, sql_ns, status, error) VALUES (?, ?, 1, 'shop', ?, 'http', ?, ?, ?, ?, ?, ?, ?)",
            (tid, 0x7000 + tid, name, BASE + start_ms * MS, BASE + (start_ms + ms) * MS, ms * MS, ms * MS // 4,
             sql_ms * MS, status, error))
        elapsed.append(ms)

    def sql(tid, no, text_id, fp, start_ms, ms):
        db.execute(
            "INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns, text_id, rows, "
            "fingerprint) VALUES (?, ?, -1, 'SQL', ?, 0, 0, ?, ?, 1, ?)",
            (tid, no, start_ms * MS, ms * MS, text_id, fp))

    def cache(tid, no, kind, text_id, fp, ms, attrs, error=None):
        db.execute(
            "INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns, text_id, "
            "fingerprint, attributes, error) VALUES (?, ?, -1, ?, 0, 0, 0, ?, ?, ?, ?, ?)",
            (tid, no, kind, ms * MS, text_id, fp, attrs, error))

    for i in range(1, plain + 1):  # 1..plain ms, one SQL each; every 10th fails
        tx(i, "GET /orders/{id}", i * 100, i, sql_ms=1, error="timeout" if i % 10 == 0 else None,
           status=500 if i % 10 == 0 else 200)
        sql(i, 1, 1, 0x111, 0, 1)
        cache(i, 2, "REDIS", 3, 0x333, 1, '{"command":"GET","reply":"%s"}' % ("nil" if i % 4 == 0 else "$"))
        if i <= 5:
            cache(i, 3, "MEMCACHED", 4, 0x444, 2, '{"command":"get","result":"%s"}' % ("miss" if i == 1 else "hit"),
                  "SERVER_ERROR out of memory" if i == 2 else None)
    n1 = plain + 1
    tx(n1, EVIL_NAME, 10_000, 500, sql_ms=12 * 20)
    for k in range(12):
        sql(n1, 1 + k, 2, 0x222, k * 20, 20)
    cache(n1, 13, "REDIS", 5, 0x555, 3, '{"command":"GET","reply":"nil"}')
    db.execute("INSERT INTO step_summaries(tx_id, kind, fingerprint, text_id, count, elapsed_ns) "
               "VALUES (?, 'REDIS', ?, 3, 100, ?)", (n1, 0x333, 50 * MS))
    db.commit()
    db.close()
    return elapsed
