"""The agent (and `txray run`) where a container would put them: a read-only root file system and no /proc
(an empty tmpfs over it, in a private mount namespace made with unshare). The agent writes nothing to
disk and reads /proc only for the program's name and command line: without /proc it takes argv[0] as
glibc kept it, `txray run` finds the agent from its argv[0], and the request is still a transaction.
Skipped where mount namespaces are not allowed (not root, or a seccomp profile that forbids unshare)."""
import os
import shutil
import signal
import subprocess
import unittest

from txraytest import PYTHON, TXRAY, Collector, TxrayTestCase, bare_env, free_port, show_json, wait_port, \
    wait_transactions

HIDE_PROC_AND_LOCK_ROOT = 'mount -t tmpfs -o ro,size=4k none /proc && mount -o remount,bind,ro / && exec "$@"'


def namespaces_allowed():
    if not shutil.which("unshare"):
        return False
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", HIDE_PROC_AND_LOCK_ROOT,
                        "sh", "/bin/true"], capture_output=True)
    return r.returncode == 0


@unittest.skipUnless(namespaces_allowed(), "no mount namespaces here (unshare --mount needs CAP_SYS_ADMIN)")
class AgentWithoutProc(TxrayTestCase):
    def test_read_only_root_and_no_proc(self):
        site = os.path.join(self.tmp, "site")
        os.mkdir(site)
        with open(os.path.join(site, "index.txt"), "w") as f:
            f.write("served from a locked-down root\n")
        port = free_port()
        with Collector(self.tmp) as c:
            probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                    HIDE_PROC_AND_LOCK_ROOT, "sh", "/bin/sh", "-c",
                                    f"ls /proc | wc -l; touch /txray-ro-probe 2>/dev/null && echo writable"],
                                   capture_output=True, text=True, timeout=30)
            self.assertEqual(probe.stdout.split(), ["0"], "the namespace should have an empty /proc and a read-only /")
            log = open(os.path.join(self.tmp, "server.log"), "wb")
            server = self.spawn(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                 HIDE_PROC_AND_LOCK_ROOT, "sh",
                                 TXRAY, "run", "--collector", c.endpoint, "--",
                                 PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                                cwd=site, env=bare_env(), stdout=log, stderr=subprocess.STDOUT)
            wait_port(port)
            out = subprocess.run(["curl", "-sS", "--max-time", "20", f"http://127.0.0.1:{port}/index.txt"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.stdout, "served from a locked-down root\n", out.stderr)
            wait_transactions(c.db, 1)
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)
            log.close()
        with open(os.path.join(self.tmp, "server.log"), "rb") as f:
            text = f.read().decode(errors="replace")
        self.assertIn("txray run: ", text)
        self.assertNotIn("agent library not found", text)
        txs = [t for t in show_json(c.db, "--last", "10") if t["name"] == "GET /index.txt"]
        self.assertEqual(len(txs), 1, text)
        self.assertEqual(txs[0]["status"], 200)
        self.assertEqual(txs[0]["program"], "python3")  # argv[0], with no /proc/self/exe to read
        self.assertEqual(txs[0]["app"], "python3")
