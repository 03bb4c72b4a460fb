"""The agent survives programs that close every descriptor, keeps errno, and never holds up exit when
the collector is away."""
import subprocess
import time

from agenttools import curl, stop
from txraytest import PYTHON, Collector, TxrayTestCase, agent_env, check_sums, free_port, show_json, \
    wait_port, wait_transactions

# An HTTP server that, between two requests, closes every descriptor but its listening socket (as
# daemons and spawners do, with close_range) and then also tries plain close() on every number.
CLOSER = r"""
import http.server, os, sys, threading
port = int(sys.argv[1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok " + self.path.encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", port), H)
keep = srv.socket.fileno()
srv.handle_request()                  # the test's port probe (connects, sends nothing)
srv.handle_request()                  # request 1: the agent's transport is up after this
os.closerange(3, keep)                # close_range() around the listening socket
os.closerange(keep + 1, 65536)
for fd in range(3, 1024):
    if fd != keep:
        try: os.close(fd)
        except OSError: pass
srv.handle_request()                  # requests 2 and 3: must still be traced
srv.handle_request()
print("done", flush=True)
"""


class AgentRobustness(TxrayTestCase):
    def test_program_closing_every_descriptor_keeps_working(self):
        port = free_port()
        with Collector(self.tmp) as c:
            p = self.spawn([PYTHON, "-c", CLOSER, str(port)], stdout=subprocess.PIPE,
                           env=agent_env(c.endpoint, app="closer"))
            wait_port(port)
            for i in range(3):
                self.assertEqual(curl(f"http://127.0.0.1:{port}/r{i}")[0], 200)
            out, _ = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0)
            self.assertEqual(out.strip(), b"done")
            wait_transactions(c.db, 3)
        names = sorted(t["name"] for t in show_json(c.db, "--last", "10"))
        self.assertIn("GET /r0", names)
        self.assertIn("GET /r1", names)
        self.assertIn("GET /r2", names)
        self.assertEqual(len(names), 3)
        for t in show_json(c.db, "--last", "10"):
            check_sums(self, t)

    def test_exit_is_not_held_up_when_the_collector_is_away(self):
        endpoint = f"tcp://127.0.0.1:{free_port()}"  # nobody listens
        t0 = time.monotonic()
        r = subprocess.run([PYTHON, "-c", "print('hi')"], env=agent_env(endpoint, mode="process"),
                           capture_output=True, timeout=30)
        self.assertEqual(r.stdout, b"hi\n")
        self.assertLess(time.monotonic() - t0, 5.0)

    def test_program_using_many_threads_and_signals(self):
        script = r"""
import os, signal, socket, threading
hits = []
signal.signal(signal.SIGUSR1, lambda *a: hits.append(1))
def work():
    for _ in range(50):
        a, b = socket.socketpair(); a.sendall(b"x" * 100); b.recv(100); a.close(); b.close()
ts = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in ts]
for _ in range(20): os.kill(os.getpid(), signal.SIGUSR1)
[t.join() for t in ts]
print(len(hits))
"""
        with Collector(self.tmp) as c:
            r = subprocess.run([PYTHON, "-c", script], env=agent_env(c.endpoint, mode="process"),
                               capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"20\n")
