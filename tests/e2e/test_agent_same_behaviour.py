"""Programs behave the same with and without the agent (stdout and exit code): python3, curl and the
burner sample; TXRAY_MODE=process turns one run of a real program into one transaction; the C API
works with and without the agent."""
import os
import subprocess

from agenttools import BURNER, CURL, start_backend, start_http_server, stop
from txraytest import PYTHON, Collector, TxrayTestCase, agent_env, bare_env, check_sums, show_json, \
    wait_transactions, free_port

PY_SCRIPT = r"""
import hashlib, json, os, socket, sys, threading
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def serve():
    c, _ = srv.accept(); data = c.recv(100); c.sendall(data[::-1] * 1000); c.close()
threading.Thread(target=serve).start()
s = socket.create_connection(srv.getsockname()); s.sendall(b"abcdef"); got = b""
while True:
    b = s.recv(4096)
    if not b: break
    got += b
s.close()
try:
    os.close(987654)
except OSError as e:
    print("errno", e.errno)
print(json.dumps({"len": len(got), "sha": hashlib.sha256(got).hexdigest()[:16], "env": sorted(k for k in os.environ if k.startswith("TXRAY_"))[:0]}))
sys.exit(3)
"""


def run(args, env, **kw):
    return subprocess.run(args, env=env, capture_output=True, timeout=60, **kw)


class AgentSameBehaviour(TxrayTestCase):
    def compare(self, args, endpoint, mode=None):
        bare = run(args, bare_env())
        traced = run(args, agent_env(endpoint, mode=mode))
        self.assertEqual(traced.stdout, bare.stdout, args)
        self.assertEqual(traced.returncode, bare.returncode, args)
        self.assertEqual(traced.stderr, bare.stderr, args)
        return bare

    def test_python_curl_and_burner(self):
        folder = os.path.join(self.tmp, "www")
        os.makedirs(folder)
        with open(os.path.join(folder, "x.txt"), "w") as f:
            f.write("x" * 5000)
        backend = start_backend(self, 7777)
        with Collector(self.tmp) as c:
            py = self.compare([PYTHON, "-c", PY_SCRIPT], c.endpoint)
            self.assertEqual(py.returncode, 3)
            self.assertIn(b"errno 9", py.stdout)  # EBADF came through unchanged
            self.compare([PYTHON, "-c", PY_SCRIPT], c.endpoint, mode="process")
            server, port = start_http_server(self, None, folder)  # bare server, traced client
            out = self.compare([CURL, "-s", f"http://127.0.0.1:{port}/x.txt"], c.endpoint)
            self.assertEqual(len(out.stdout), 5000)
            self.compare([CURL, "-s", f"http://127.0.0.1:{port}/x.txt"], c.endpoint, mode="process")
            refused = self.compare([CURL, "-s", f"http://127.0.0.1:{free_port()}/"], c.endpoint, mode="process")
            self.assertEqual(refused.returncode, 7)  # couldn't connect
            fetched = self.compare([BURNER, "fetch", "--backend", f"127.0.0.1:{backend}"], c.endpoint)
            self.assertIn(b"read 7777 bytes", fetched.stdout)
            bad = self.compare([BURNER, "serve", "--no-such-option"], c.endpoint)
            self.assertNotEqual(bad.returncode, 0)
            stop(server)

    def test_process_mode_one_transaction_per_run(self):
        folder = os.path.join(self.tmp, "www")
        os.makedirs(folder)
        with open(os.path.join(folder, "y.bin"), "wb") as f:
            f.write(os.urandom(30000))
        with Collector(self.tmp) as c:
            server, port = start_http_server(self, None, folder)
            ok = run([CURL, "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/y.bin"],
                     agent_env(c.endpoint, mode="process", app="cli"))
            self.assertEqual(ok.returncode, 0)
            closed = free_port()
            failed = run([CURL, "-s", f"http://127.0.0.1:{closed}/"], agent_env(c.endpoint, mode="process", app="cli"))
            self.assertEqual(failed.returncode, 7)
            wait_transactions(c.db, 2)
            stop(server)
        txs = {t["status"]: t for t in show_json(c.db, "--last", "10")}
        good, bad = txs[0], txs[7]
        self.assertEqual(good["kind"], "process")
        self.assertTrue(good["name"].startswith("curl -s -o /dev/null http://127.0.0.1:"), good["name"])
        self.assertEqual(good["error"], "")
        check_sums(self, good)
        socks = [s for s in good["steps"] if s["kind"] == "SOCKET"]
        closes = [s for s in good["steps"] if s["kind"] == "SOCKET_CLOSE"]
        self.assertEqual(len(socks), 1)
        self.assertEqual(socks[0]["attributes"]["port"], str(port))
        self.assertEqual(len(closes), 1)
        self.assertGreater(closes[0]["bytes_read"], 30000)
        self.assertEqual(closes[0]["id"], socks[0]["id"])
        self.assertEqual(bad["error"], "exit status 7")
        check_sums(self, bad)
        refused = [s for s in bad["steps"] if s["kind"] == "SOCKET"]
        self.assertTrue(refused and refused[0]["error"] == "ECONNREFUSED", bad["steps"])

    def test_mode_off_records_nothing(self):
        with Collector(self.tmp) as c:
            r = run([CURL, "-s", "-o", "/dev/null", "-w", "%{http_code}", f"http://127.0.0.1:{free_port()}/"],
                    agent_env(c.endpoint, mode="off"))
            self.assertEqual(r.returncode, 7)
            import time
            time.sleep(1.0)
        self.assertEqual(show_json(c.db, "--last", "10"), [])
