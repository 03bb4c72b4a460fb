"""Disk full: the collector's store on a small file system the test makes (a tmpfs; needs root). While the
disk is full the collector stays up, says so on its status line, keeps what it committed (integrity_check
ok) and what it accepted (held, not dropped: the senders wait); when space returns it stores everything,
with nothing lost."""
import os
import re
import shutil
import sqlite3
import subprocess
import time
import unittest

from txraytest import SENDER, Collector, TxrayTestCase, count_transactions, wait_for


def try_mount(path, size_mb):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "tmpfs", path],
                       capture_output=True, text=True)
    return r.returncode == 0


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("mount"), "needs root to mount a small file system")
class DiskFull(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.fs = os.path.join(self.tmp, "fs")
        if not try_mount(self.fs, 64):
            self.skipTest("cannot mount a tmpfs here")

    def tearDown(self):
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["umount", "-l", self.fs], capture_output=True)
        super().tearDown()

    def test_disk_full_holds_then_stores_everything(self):
        # Ballast leaves ~5 MB for the store: far less than the transactions sent need.
        ballast = os.path.join(self.fs, "ballast")
        with open(ballast, "wb") as f:
            f.write(b"\0" * (59 << 20))
        db = os.path.join(self.fs, "txray.db")
        c = Collector(self.tmp, db=db).start()
        try:
            sent = 20000
            sender = self.spawn([SENDER, "--endpoint", c.endpoint, "--transactions", str(sent), "--per-batch", "100",
                                 "--steps", "6"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for(lambda: "DISK FULL for" in c.log_text(), timeout=60, what="the status line to say the disk is full")
            t_full = time.monotonic()
            time.sleep(2)
            self.assertTrue(c.running(), c.log_text())
            # What was committed is intact and readable meanwhile.
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            during = con.execute("SELECT count(*) FROM transactions").fetchone()[0]
            con.close()
            self.assertEqual(ok, "ok")
            self.assertLess(during, sent)
            # Space returns: everything held is stored, nothing lost.
            os.remove(ballast)
            wait_for(lambda: count_transactions(db) >= sent, timeout=120, what="all transactions after space returned")
            recovered = time.monotonic() - t_full
            self.assertEqual(sender.wait(timeout=60), 0)
        finally:
            rc = c.stop()
        self.assertEqual(rc, 0)
        log = c.log_text()
        lost = int(re.findall(r"lost (\d+)", log)[-1])
        self.assertEqual(lost, 0, log[-2000:])
        self.assertEqual(count_transactions(db), sent)
        self.assertIn("the disk is full: keeping", log)
        self.assertIn("space again after", log)
        self.assertNotIn("could not store", log)
        print(f"\ndisk full: {during} of {sent} transactions stored before the disk filled, collector up and "
              f"saying so, integrity_check ok; space returned after {recovered:.1f} s: {sent}/{sent} stored, 0 lost")


if __name__ == "__main__":
    unittest.main()
