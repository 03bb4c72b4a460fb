"""The HTML report in headless Chromium: it renders (screenshot), and a `<script>` in the data stays text.

Needs Debian's `chromium` (scripts/install-deps.sh installs it).
"""
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import report_store
from txraytest import TXRAY, TxrayTestCase

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def chromium(*args):
    profile = tempfile.mkdtemp(prefix="txray-chromium-")
    try:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             *args], capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class ReportHtml(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.assertTrue(os.path.exists(CHROMIUM), "chromium is missing: run scripts/install-deps.sh")
        self.db = os.path.join(self.tmp, "store.db")
        report_store.build(self.db)
        self.html = os.path.join(self.tmp, "report.html")
        subprocess.run([TXRAY, "report", "--db", self.db, "--format", "html", "-o", self.html], check=True)

    def test_script_in_the_data_shows_as_text(self):
        dom = chromium("--dump-dom", "file://" + self.html)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        page = dom.stdout
        # The payload is in the page as text, and did not run: the title is still ours.
        self.assertIn("GET /&lt;script&gt;document.title=\"INJECTED\"&lt;/script&gt;", page)
        self.assertIn("<title>txray slow-call report</title>", page)
        self.assertNotIn("INJECTED</title>", page)
        self.assertNotIn("<script", page)
        self.assertNotIn("<img", page)  # the SQL text's <img onerror> stayed text too
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;", page)
        # The N+1 transaction is in the repeated-calls table.
        self.assertIn("Repeated calls inside one transaction", page)

    def test_screenshot(self):
        png = os.path.join(self.tmp, "report.png")
        shot = chromium(f"--screenshot={png}", "--window-size=1400,2400", "file://" + self.html)
        self.assertEqual(shot.returncode, 0, shot.stderr[-2000:])
        with open(png, "rb") as f:
            head = f.read(24)
        self.assertEqual(head[:8], b"\x89PNG\r\n\x1a\n")
        width, height = struct.unpack(">II", head[16:24])
        self.assertEqual((width, height), (1400, 2400))
        self.assertGreater(os.path.getsize(png), 20_000)  # a real page, not a blank one
        if os.environ.get("TXRAY_KEEP_SCREENSHOT"):
            shutil.copy(png, os.environ["TXRAY_KEEP_SCREENSHOT"])


if __name__ == "__main__":
    unittest.main()
