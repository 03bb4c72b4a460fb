"""The database file removed or replaced under a running collector: it notices (a stat of the path between
commits), says so, and stores into what the path names now — a new store where the old was removed, the
replacement store where one was moved in — instead of writing on into a file nobody can read."""
import os
import shutil
import sqlite3

from txraytest import Collector, TxrayTestCase, count_transactions, send_batches, wait_for, wait_transactions


def integrity(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


class StoreReplaced(TxrayTestCase):
    def test_removed_store_is_created_again(self):
        with Collector(self.tmp) as c:
            send_batches(c.endpoint, "--transactions", 100, "--seed", 1)
            wait_transactions(c.db, 100)
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(c.db + suffix):
                    os.remove(c.db + suffix)
            send_batches(c.endpoint, "--transactions", 50, "--seed", 2)
            wait_for(lambda: os.path.exists(c.db) and count_transactions(c.db) == 50, timeout=30,
                     what="the 50 new transactions in a new store at the path")
            self.assertTrue(c.running())
            self.assertEqual(oct(os.stat(c.db).st_mode & 0o777), "0o600")
        self.assertEqual(count_transactions(c.db), 50)
        self.assertEqual(integrity(c.db), "ok")
        self.assertIn("was removed under the collector", c.log_text())

    def test_store_moved_in_is_written_to(self):
        other_dir = os.path.join(self.tmp, "other")
        os.mkdir(other_dir)
        with Collector(other_dir) as o:  # another store, with 7 transactions of its own
            send_batches(o.endpoint, "--transactions", 7, "--seed", 9)
            wait_transactions(o.db, 7)
        with Collector(self.tmp) as c:
            send_batches(c.endpoint, "--transactions", 100, "--seed", 1)
            wait_transactions(c.db, 100)
            shutil.move(o.db, c.db)  # rename over the open store
            send_batches(c.endpoint, "--transactions", 50, "--seed", 2)
            wait_for(lambda: count_transactions(c.db) == 57, timeout=30, what="the 50 in the store moved in")
            self.assertTrue(c.running())
        self.assertEqual(count_transactions(c.db), 57)
        self.assertEqual(integrity(c.db), "ok")
        self.assertIn("was replaced under the collector", c.log_text())
        print("\nstore removed: a new store at the path took the next 50/50; store replaced: the moved-in "
              "store took the next 50/50 (7 + 50 = 57), integrity_check ok")
