"""`make demo` (scripts/demo.sh), shortened: it runs end to end, stores transactions of the six sample
apps (the gRPC pair included), prints a report, saves a viewer screenshot when there is no display — and leaves no process behind,
also when interrupted with Ctrl-C (SIGINT)."""
import os
import signal
import sqlite3
import subprocess
import time
import unittest

from txraytest import BUILD_DIR, SOURCE_DIR, TxrayTestCase, wait_for

DEMO = os.path.join(SOURCE_DIR, "scripts", "demo.sh")


def leftovers(marker):
    """Processes still running that the demo started: its output folder in their command line
    (pgrep -f), or its TXRAY_DEMO_DIR in their environment (every child inherits it)."""
    found = set()
    r = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    found.update(int(p) for p in r.stdout.split())
    needle = f"TXRAY_DEMO_DIR={marker}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.add(int(pid))
        except OSError:
            pass
    return found


def demo_env(out, seconds):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("LD_PRELOAD", None)
    env["TXRAY_DEMO_SECONDS"] = str(seconds)
    env["TXRAY_DEMO_DIR"] = out
    return env


class DemoTest(TxrayTestCase):
    def test_short_demo(self):
        out = os.path.join(self.tmp, "demo")
        r = subprocess.run(["bash", DEMO, BUILD_DIR], env=demo_env(out, 6), capture_output=True, text=True,
                           timeout=400)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertIn("stored:", r.stdout)
        self.assertIn("slow-call report", r.stdout)
        self.assertIn("TOTAL[", r.stdout, "the slowest relay profile is printed")
        con = sqlite3.connect(f"file:{out}/txray.db?mode=ro", uri=True)
        apps = {a for (a,) in con.execute("SELECT DISTINCT app FROM transactions")}
        # The drivers finish their requests before the services stop: nothing is cut off into an error.
        failed = con.execute("SELECT app, name, error FROM transactions WHERE error IS NOT NULL LIMIT 5").fetchall()
        # The gRPC front's call to the back is a row of the request that made it (the Python shim; the
        # driver sends a traceparent with each call): one per front transaction, none left unattributed.
        front_calls = con.execute(
            "SELECT t.id, count(s.no) FROM transactions t LEFT JOIN steps s ON s.tx_id = t.id AND s.kind = 'HTTP_CALL' "
            "WHERE t.app = 'grpc-front' AND t.kind = 'grpc' GROUP BY t.id").fetchall()
        # The demo's first report and the viewer's status bar: no unattributed steps but the one HTTP/2
        # connection grpc-front's channel opens (on grpc's own thread) to grpc-back. The orders database is
        # generated untraced: its 400,000 INSERTs are no steps at all.
        unattributed = con.execute(
            "SELECT t.app, s.kind, count(*) FROM steps s JOIN transactions t ON t.id = s.tx_id "
            "WHERE t.kind = 'unattributed' AND s.kind NOT IN ('START', 'END') GROUP BY 1, 2").fetchall()
        con.close()
        self.assertEqual({(a, k) for a, k, _ in unattributed} - {("grpc-front", "SOCKET"), ("grpc-front", "SOCKET_CLOSE")},
                         set(), unattributed)
        self.assertNotIn("(SQL ", r.stdout.split("Unattributed steps", 1)[-1].split("\n", 1)[0])
        self.assertTrue(front_calls)
        self.assertEqual({n for _, n in front_calls}, {1}, "a grpc-front transaction without its call to the back")
        self.assertEqual(failed, [])
        self.assertEqual(apps, {"relay", "relay-backend", "orders", "py-orders", "grpc-front", "grpc-back"})
        if os.path.exists(os.path.join(BUILD_DIR, "bin", "txray-viewer")):
            self.assertIn(f"screenshot of the viewer saved to {out}/viewer.png", r.stdout)
            with open(os.path.join(out, "viewer.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        time.sleep(0.5)
        self.assertEqual(leftovers(out), set())

    def test_ctrl_c_leaves_nothing_behind(self):
        out = os.path.join(self.tmp, "demo-int")
        p = subprocess.Popen(["bash", DEMO, BUILD_DIR], env=demo_env(out, 120), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self._procs.append(p)
        # Interrupt once the load is running (the progress line shows up).
        buf = b""
        deadline = time.monotonic() + 180
        while b"stored:" not in buf and time.monotonic() < deadline and p.poll() is None:
            buf += os.read(p.stdout.fileno(), 4096)
        self.assertIn(b"stored:", buf)
        self.assertTrue(leftovers(out), "the demo's processes are running")
        os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        rest, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, (buf + rest).decode(errors="replace")[-2000:])
        self.assertIn(b"interrupted", rest)
        wait_for(lambda: not leftovers(out), timeout=10, what="no demo process left")


if __name__ == "__main__":
    unittest.main()
