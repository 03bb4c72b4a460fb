"""A txray store with two windows for `txray report --baseline-*` (issue 15): the same service before and
after a change. In the second window one SQL fingerprint became slower (3 ms -> 9 ms per execution) and
every request makes a new outbound call; one request fails with a new error. Profiles are consistent:
GAPs add up to the response time, CPU_Ts to the CPU time.
"""
import os
import sqlite3

from txraytest import SOURCE_DIR

MS = 1_000_000
BASE = 1_764_410_400 * 1_000_000_000  # 2025-11-29T10:00:00Z
WINDOW2 = BASE + 600_000 * MS        # the second window starts 10 minutes later
SLOW_SQL = "SELECT * FROM prices WHERE item = ? AND note <> '<b>&amp;</b>'"
FAST_SQL = "SELECT * FROM items WHERE id = ?"
NEW_CALL = "GET http://pricing.internal:8080/quote?item=1"
EVIL_NAME = 'GET /item/<script>document.title="X"</script>'
SLOW_FP, FAST_FP = 0x5105, 0xFA57
N_BASE, N_CUR = 40, 30


def build(path):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    with open(os.path.join(SOURCE_DIR, "collector", "store", "schema.sql")) as f:
        db.executescript(f.read())
    db.execute("INSERT INTO agents(id, instance_id, app) VALUES (1, 11, 'shop')")
    for i, t in enumerate((SLOW_SQL, FAST_SQL, NEW_CALL), 1):
        db.execute("INSERT INTO texts(id, hash, text) VALUES (?, ?, ?)", (i, i, t))

    def tx(tid, start_ns, slow_ms, call_ms, error=None):
        # START, SQL fast 1 ms, SQL slow, [HTTP_CALL], 4 ms CPU + 2 ms waiting, END
        rows, at = [], 0

        def add(kind, elapsed, text_id=None, fp=None, gap=0, cpu=0):
            nonlocal at
            at += gap
            rows.append((kind, at, gap, cpu, elapsed, text_id, fp))
            at += elapsed

        add("START", 0)
        add("SQL", 1 * MS, 2, FAST_FP)
        add("SQL", slow_ms * MS, 1, SLOW_FP)
        if call_ms:
            add("HTTP_CALL", call_ms * MS, 3)
        add("END", 0, gap=6 * MS, cpu=4 * MS)
        db.execute(
            "INSERT INTO transactions(id, txid, agent_id, app, name, kind, start_unix_ns, end_unix_ns, elapsed_ns, "
            "cpu_ns, sql_ns, call_ns, sql_count, call_count, status, error) "
            "VALUES (?, ?, 1, 'shop', ?, 'http', ?, ?, ?, ?, ?, ?, 2, ?, ?, ?)",
            (tid, 0x9000 + tid, EVIL_NAME, start_ns, start_ns + at, at, 4 * MS, (1 + slow_ms) * MS, call_ms * MS,
             1 if call_ms else 0, 500 if error else 200, error))
        for no, (kind, start, gap, cpu, elapsed, text_id, fp) in enumerate(rows):
            db.execute(
                "INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns, text_id, "
                "fingerprint, status) VALUES (?, ?, -1, ?, ?, ?, ?, ?, ?, ?, ?)",
                (tid, no, kind, start, gap, cpu, elapsed, text_id, fp, 200 if kind == "HTTP_CALL" else None))

    for i in range(N_BASE):
        tx(1 + i, BASE + i * 1000 * MS, 3, 0)
    for i in range(N_CUR):
        tx(1000 + i, WINDOW2 + i * 1000 * MS, 9, 2, error="pricing <timeout>" if i == 7 else None)
    db.commit()
    db.close()


def windows():
    """(baseline since, until, current since, until) as unix seconds strings."""
    s = lambda ns: f"{ns / 1e9:.3f}"
    return s(BASE), s(BASE + 300_000 * MS), s(WINDOW2), s(WINDOW2 + 300_000 * MS)
