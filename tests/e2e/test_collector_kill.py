"""What was committed is never lost: `kill -9` of the collector while agents stream, again and again. After
each kill the store opens, `PRAGMA integrity_check` is ok, and every transaction the collector had reported
stored (its status line) and every txid read back from the store before the kill is there.

TXRAY_KILLS (default 20) and TXRAY_KILL_SECONDS (default 20: the collector's total up-time; each kill's
checks come on top, about 30 s in all) set the length; `make soak` runs 200 kills (scripts/soak.sh)."""
import os
import random
import re
import signal
import sqlite3
import subprocess
import threading
import time

from txraytest import SENDER, TXRAY, Collector, TxrayTestCase, count_transactions, wait_for

KILLS = int(os.environ.get("TXRAY_KILLS", "20"))
SECONDS = float(os.environ.get("TXRAY_KILL_SECONDS", "20"))  # collector up-time in all; checks come on top


class Streamers:
    """Senders that keep streaming to one endpoint: each txray-test-sender sends its transactions (a fresh
    seed each time, so fresh txids) and blocks while the collector is down; when one ends (or after 4 s)
    the next starts."""

    def __init__(self, endpoint, count=2):
        self.endpoint = endpoint
        self.stop = threading.Event()
        self.procs = []
        self.seed = 1000
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.loop, args=(i,), daemon=True) for i in range(count)]

    def loop(self, i):
        while not self.stop.is_set():
            with self.lock:
                self.seed += 1
                seed = self.seed
            p = subprocess.Popen([SENDER, "--endpoint", self.endpoint, "--transactions", "10000", "--per-batch", "100",
                                  "--steps", "3", "--seed", str(seed), "--instance-id", str(100 + i)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with self.lock:
                self.procs.append(p)
            # A sender whose collector was killed under it may wait for a long time on its last messages
            # (linger): replace it after a few seconds, so that the stream goes on.
            deadline = time.monotonic() + 4
            while p.poll() is None and not self.stop.is_set() and time.monotonic() < deadline:
                time.sleep(0.05)
            if p.poll() is None:
                p.kill()
                p.wait()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=20)


def last_stored(log_text):
    """'N stored in total' of the last status line, 0 when none was printed yet."""
    found = re.findall(r"(\d+) stored in total", log_text)
    return int(found[-1]) if found else 0


def check_store(db):
    """Opens the store as a reader would; returns (integrity_check, transactions)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        n = con.execute("SELECT count(*) FROM transactions").fetchone()[0]
        return ok, n
    finally:
        con.close()


def recent_txids(db, n=500):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return [r[0] for r in con.execute("SELECT txid FROM transactions ORDER BY rowid DESC LIMIT ?", (n,))]
    finally:
        con.close()


def present(db, txids):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        q = "SELECT count(*) FROM transactions WHERE txid IN (%s)" % ",".join("?" * len(txids))
        return con.execute(q, txids).fetchone()[0] if txids else 0
    finally:
        con.close()


def start_collector(endpoint, db, log):
    """A collector printing its status line every 0.1 s, its output appended to `log`."""
    with open(log, "ab") as f:
        return subprocess.Popen([TXRAY, "collect", "--listen", endpoint, "--db", db, "--status-interval", "0.1"],
                                stdout=f, stderr=subprocess.STDOUT)


class CollectorKill(TxrayTestCase):
    def test_kill_9_loses_nothing_committed(self):
        endpoint = f"ipc://{self.tmp}/collector.sock"
        db = os.path.join(self.tmp, "txray.db")
        rng = random.Random(12)
        per_cycle = SECONDS / KILLS
        kills = 0
        total_reported = 0
        gaps = []
        t_start = time.monotonic()
        with Streamers(endpoint):
            for cycle in range(KILLS):
                before = count_transactions(db)
                log = os.path.join(self.tmp, "collector.log")
                log_offset = os.path.getsize(log) if os.path.exists(log) else 0
                proc = start_collector(endpoint, db, log)
                self._procs.append(proc)
                t_up = time.monotonic()
                # Stream for a while (about per_cycle seconds; the checks after the kill come on top), at a
                # random moment read back what is committed, then kill at once.
                time.sleep(per_cycle * rng.uniform(0.5, 1.0))
                self.assertIsNone(proc.poll(), "the collector exited by itself")
                seen = recent_txids(db) if os.path.exists(db) else []
                with open(log, "rb") as f:
                    f.seek(log_offset)
                    segment = f.read().decode("utf-8", "replace")
                    reported = last_stored(segment)
                time.sleep(rng.uniform(0, 0.05))
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                gaps.append(time.monotonic() - t_up)

                ok, n = check_store(db)
                self.assertEqual(ok, "ok", f"integrity_check after kill {kills}")
                self.assertGreaterEqual(n, before + reported,
                                        f"kill {kills}: {before} before this run + {reported} reported stored, {n} found")
                self.assertEqual(present(db, seen), len(seen), f"kill {kills}: txids read back before the kill lost")
                total_reported += reported
                if os.environ.get("TXRAY_KILL_VERBOSE"):
                    print(f"kill {kills}: before {before} reported {reported} after {n} seen {len(seen)}")
        elapsed = time.monotonic() - t_start
        # A last, clean run: the store still takes new data after all the kills.
        final = count_transactions(db)
        with Collector(self.tmp, endpoint=endpoint, db=db) as c:
            subprocess.run([SENDER, "--endpoint", endpoint, "--transactions", "100", "--seed", "1"], check=True,
                           capture_output=True, timeout=60)
            wait_for(lambda: count_transactions(db) >= final + 100, timeout=30, what="a clean run after the kills")
        ok, n = check_store(db)
        self.assertEqual(ok, "ok")
        self.assertGreater(total_reported, 0, "the collector never reported anything stored: nothing was tested")
        print(f"\nkill -9: {kills} kills in {elapsed:.1f} s, integrity_check ok after each, "
              f"{total_reported} transactions reported stored before the kills, all there "
              f"({n} in the store at the end)")

    def test_wal_is_checkpointed_while_running(self):
        # What a kill -9 leaves behind is the WAL since the last checkpoint: the collector must checkpoint
        # while it runs (its checkpointer once never did, and each crash left a bigger WAL to recover).
        with Collector(self.tmp) as c:
            subprocess.run([SENDER, "--endpoint", c.endpoint, "--transactions", "20000", "--per-batch", "100"],
                           check=True, capture_output=True, timeout=120)
            wait_for(lambda: count_transactions(c.db) >= 20000, timeout=60, what="20000 transactions")
            wait_for(lambda: os.path.getsize(c.db) > 4 << 20, timeout=10, what="a checkpoint into the database file")
            self.assertTrue(c.running())
