"""The runtime shims' own tests (agent/runtimes/node, agent/runtimes/python), without the agent.

- Inert: without the agent (the first hint gets EBADF) the shim switches itself off: programs answer as
  ever, nothing is patched or subscribed, no exception; TXRAY_RUNTIME_HINTS=0 sends nothing at all.
- Hints: with hint_recorder.so preloaded (a stand-in for the agent that answers the protocol and logs every
  hint and every HTTP request line read or written on a socket, in order), the attribution fronts of the
  e2e tests (tests/e2e/attr/) under concurrent keep-alive clients give the hints the protocol needs:
  node: `O<outfd>:<fd>:<token>` right before each call's head is written on outfd, naming the request
  (`R<fd>:<n>` token) whose id the call carries; python: each call's head written inside `E<fd>` ... `L`
  of the request whose id it carries, each run_in_executor capture attached on a worker and released once.
Run by CTest as agent.runtimes.* with TXRAY_HINT_RECORDER (the built stand-in) in the environment.
"""
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
NODE_SHIM = os.path.join(SOURCE, "agent", "runtimes", "node", "txray-hints.js")
PYTHON_SHIM_DIR = os.path.join(SOURCE, "agent", "runtimes", "python")
ATTR = os.path.join(SOURCE, "tests", "e2e", "attr")
RECORDER = os.environ.get("TXRAY_HINT_RECORDER", "")
NODE = shutil.which("node") or "/usr/bin/node"
PYTHON = "/usr/bin/python3"
HINT_FD = 2147483600


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"port {port} never opened")


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "NODE_OPTIONS", "PYTHONPATH")}
    env.update(extra or {})
    return env


def drive(port, requests, connections):
    out = {}
    lock = threading.Lock()

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(k, requests, connections):
            conn.request("GET", f"/r/{i}")
            body = conn.getresponse().read().decode()
            with lock:
                out[i] = body
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def parse_log(path):
    """[(kind, tid, fd, text)] from hint_recorder's log."""
    out = []
    with open(path) as f:
        for line in f:
            kind, tid, fd, text = line.rstrip("\n").split(" ", 3)
            out.append((kind, int(tid), int(fd), text))
    return out


def request_id(text):
    return text.split(" ")[1].rsplit("/", 1)[1]


class Pair:
    """attr/back.py (bare) and a front under test, with the recorder or bare."""

    def __init__(self, test, front_cmd, env):
        self.back_port, self.port = free_port(), free_port()
        self.back = subprocess.Popen([PYTHON, os.path.join(ATTR, "back.py"), str(self.back_port)],
                                     env=clean_env(), stdout=subprocess.DEVNULL)
        wait_port(self.back_port)
        cmd = [a.format(port=self.port, back=self.back_port) for a in front_cmd]
        self.front = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        test.addCleanup(self.stop)
        wait_port(self.port)

    def stop(self):
        if self.front.stdout is None or self.front.stdout.closed:
            return ""
        for p in (self.front, self.back):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        out = self.front.stdout.read().decode("utf-8", "replace")
        self.front.stdout.close()
        return out


class ShimTestCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="txray-shim-")
        self.tmp = self._tmp.name
        self.log = os.path.join(self.tmp, "hints.log")

    def tearDown(self):
        self._tmp.cleanup()

    def recorded_env(self, extra=None):
        self.assertTrue(os.path.exists(RECORDER), f"hint recorder not built: {RECORDER!r}")
        return clean_env({"LD_PRELOAD": RECORDER, "TXRAY_HINT_LOG": self.log, **(extra or {})})

    def run_pair(self, front_cmd, env, requests=120, connections=12):
        pair = Pair(self, front_cmd, env)
        answers = drive(pair.port, requests, connections)
        out = pair.stop()
        for i in range(requests):
            self.assertTrue(answers.get(i, "").startswith(f"r {i} 200 b {i}"), f"answer {i}: {answers.get(i)}\n{out}")
        self.assertNotIn("Error", out)
        return parse_log(self.log) if os.path.exists(self.log) else []


INERT_JS = r"""
const shim = require(process.argv[2]);
const http = require('http');
const dc = require('diagnostics_channel');
const back = http.createServer((q, s) => s.end('b ' + q.url)).listen(0, '127.0.0.1', () => {
  const bp = back.address().port;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const front = http.createServer((q, s) => {
    http.get({ host: '127.0.0.1', port: bp, path: q.url, agent }, (r) => {
      let b = '';
      r.on('data', (d) => { b += d; });
      r.on('end', async () => s.end(b + '|' + await (await fetch(`http://127.0.0.1:${bp}${q.url}`)).text()));
    });
  }).listen(0, '127.0.0.1', async () => {
    const fp = front.address().port;
    const outs = await Promise.all([1, 2, 3, 4, 5].map(async (i) => (await fetch(`http://127.0.0.1:${fp}/x${i}`)).text()));
    const subscribed = ['http.server.request.start', 'undici:client:sendHeaders'].some((n) => dc.hasSubscribers(n));
    console.log(JSON.stringify({ outs, active: shim.active(), sent: shim.hintsSent(), subscribed,
                                 original: http.Agent.prototype.addRequest.name === 'addRequest' &&
                                          !http.Agent.prototype.addRequest.toString().includes('track(') }));
    process.exit(0);
  });
});
"""


@unittest.skipUnless(os.path.exists(NODE), "node is not installed")
class NodeShim(ShimTestCase):
    def run_inert(self, env):
        script = os.path.join(self.tmp, "inert.js")
        with open(script, "w") as f:
            f.write(INERT_JS)
        r = subprocess.run([NODE, "--require", NODE_SHIM, script, NODE_SHIM], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        import json
        return json.loads(r.stdout)

    def test_inert_without_agent(self):
        res = self.run_inert(clean_env())
        self.assertEqual(res["outs"], [f"b /x{i}|b /x{i}" for i in range(1, 6)])
        self.assertEqual((res["active"], res["sent"], res["subscribed"], res["original"]), (False, 0, False, True))

    def test_switched_off_by_variable(self):
        res = self.run_inert(self.recorded_env({"TXRAY_RUNTIME_HINTS": "0"}))
        self.assertEqual((res["active"], res["sent"]), (False, 0))
        self.assertFalse(os.path.exists(self.log) and any(k == "H" for k, *_ in parse_log(self.log)))

    def test_active_with_an_agent(self):
        res = self.run_inert(self.recorded_env())
        self.assertEqual(res["outs"], [f"b /x{i}|b /x{i}" for i in range(1, 6)])
        self.assertTrue(res["active"])
        self.assertGreater(res["sent"], 10)

    def check_outbound_hints(self, log, requests):
        """Every call head written on outfd is preceded by O<outfd>:<fd>:<token> naming its own request."""
        reads, ids_of = {}, {}      # inbound fd -> ids read in order; token -> id
        pending = {}                # outfd -> id named by the last O
        hello = [t for k, _, _, t in log if k == "H" and t.startswith("Hnode")]
        self.assertEqual(len(hello), 1)
        calls = 0
        for kind, tid, fd, text in log:
            if kind == "R" and "/r/" in text:
                reads.setdefault(fd, []).append(request_id(text))
            elif kind == "H" and text.startswith("R"):
                msg, token = text.split(" ")
                infd, n = map(int, msg[1:].split(":"))
                ids_of[token] = reads[infd][n - 1]
            elif kind == "H" and text.startswith("O"):
                outfd, infd, token = text.split(" ")[0][1:].split(":")
                pending[int(outfd)] = ids_of[token]
            elif kind == "W" and "/b/" in text:
                calls += 1
                self.assertIn(fd, pending, f"call {text} on fd {fd} without an O hint before it")
                self.assertEqual(pending.pop(fd), request_id(text), f"O hint names another request than {text}")
        self.assertEqual(calls, requests)

    def test_hints_http_agent_keepalive(self):
        env = self.recorded_env({"NODE_OPTIONS": f"--require {NODE_SHIM}"})
        log = self.run_pair([NODE, os.path.join(ATTR, "node_front.js"), "{port}", "{back}", "agent"], env)
        self.check_outbound_hints(log, 120)

    def test_hints_fetch(self):
        env = self.recorded_env({"NODE_OPTIONS": f"--require {NODE_SHIM}"})
        log = self.run_pair([NODE, os.path.join(ATTR, "node_front.js"), "{port}", "{back}", "fetch"], env)
        self.check_outbound_hints(log, 120)


PY_INERT = r"""
import asyncio, sys
import _txray_hints as h
async def main():
    n = await asyncio.get_running_loop().run_in_executor(None, sum, [1, 2, 3])
    r, w = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]))
    w.write(b"GET /b/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    body = (await r.read()).split(b"\r\n\r\n", 1)[1].decode()
    w.close()
    return n, body
n, body = asyncio.run(main())
wrapped = getattr(asyncio.base_events.BaseEventLoop.run_in_executor, "_txray_wrapped", False)
print(n, body, h.active(), h.hints_sent(), wrapped)
"""


class PythonShim(ShimTestCase):
    def py_env(self, env):
        env["PYTHONPATH"] = PYTHON_SHIM_DIR
        return env

    def run_inert(self, env):
        back = free_port()
        proc = subprocess.Popen([PYTHON, os.path.join(ATTR, "back.py"), str(back)], env=clean_env())
        try:
            wait_port(back)
            r = subprocess.run([PYTHON, "-c", PY_INERT, str(back)], env=self.py_env(env), capture_output=True,
                               text=True, timeout=60)
        finally:
            proc.terminate()
            proc.wait()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return r.stdout.split()

    def test_inert_without_agent(self):
        self.assertEqual(self.run_inert(clean_env()), ["6", "b", "7", "False", "0", "False"])

    def test_switched_off_by_variable(self):
        env = self.recorded_env({"TXRAY_RUNTIME_HINTS": "0"})
        r = subprocess.run([PYTHON, "-c", "import sys; print('_txray_hints' in sys.modules)"],
                           env=self.py_env(env), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.stdout.strip(), "False")
        self.assertFalse(os.path.exists(self.log))

    def test_active_with_an_agent(self):
        self.assertEqual(self.run_inert(self.recorded_env())[3:], ["True", "2", "True"])  # the probe, Hpython

    def test_asyncio_not_imported_by_the_shim(self):
        r = subprocess.run([PYTHON, "-c", "import sys; print('asyncio' in sys.modules)"],
                           env=self.py_env(self.recorded_env()), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.stdout.strip(), "False")

    def test_chains_the_sitecustomize_it_hides(self):
        other = os.path.join(self.tmp, "other")
        os.mkdir(other)
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("import builtins\nbuiltins.OTHER_SITECUSTOMIZE = 'ran'\n")
        for env in (clean_env(), self.recorded_env()):
            env["PYTHONPATH"] = PYTHON_SHIM_DIR + ":" + other
            r = subprocess.run([PYTHON, "-c", "print(OTHER_SITECUSTOMIZE)"], env=env, capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.stdout.strip(), "ran", r.stderr)

    def check_entered_calls(self, log, requests, executor=False):
        """Every call head is written inside E<fd> ... L (same thread) of the request with its id."""
        current, entered = {}, {}   # inbound fd -> id being served; tid -> id of the request entered
        ids_of = {}                 # token -> id (R<fd> answered while that request was being served)
        hello = [t for k, _, _, t in log if k == "H" and t.startswith("Hpython")]
        self.assertEqual(len(hello), 1)
        captures, attached, released = {}, set(), []
        calls = 0
        for kind, tid, fd, text in log:
            if kind == "R" and "/r/" in text:
                current[fd] = request_id(text)
            elif kind == "H" and text.startswith("R"):
                msg, token = text.split(" ")
                if token != "0" * 16:
                    ids_of[token] = current[int(msg[1:])]
            elif kind == "H" and text.startswith("E"):
                self.assertNotIn(tid, entered, "E inside E")
                target = text.split(" ")[0][1:].split(":")
                entered[tid] = ids_of[target[1]] if len(target) == 2 else current[int(target[0])]
            elif kind == "H" and text.startswith("L"):
                entered.pop(tid, None)
            elif kind == "H" and text.startswith("C"):
                msg, handle = text.split(" ")
                target = msg[1:].split(":")
                captures[handle] = (tid, ids_of[target[1]] if len(target) == 2 else current[int(target[0])])
            elif kind == "H" and text.startswith("A"):
                handle = text.split(" ")[0][1:]
                self.assertNotEqual(captures[handle][0], tid, "attached on the loop thread")
                attached.add(handle)
            elif kind == "H" and text.startswith("D"):
                released.append(text.split(" ")[0][1:])
            elif kind == "W" and "/b/" in text:
                calls += 1
                self.assertIn(tid, entered, f"call {text} outside E ... L")
                self.assertEqual(entered[tid], request_id(text), f"E names another request than {text}")
        self.assertEqual(calls, requests)
        self.assertEqual(entered, {})
        self.assertEqual(sorted(released), sorted(captures), "each capture released exactly once")
        if executor:
            self.assertEqual(set(captures), attached)
            self.assertGreaterEqual(len(captures), requests)

    def run_front(self, mode):
        env = self.py_env(self.recorded_env())
        return self.run_pair([PYTHON, os.path.join(ATTR, "asyncio_front.py"), "{port}", "{back}", mode], env)

    def test_hints_streams(self):
        self.check_entered_calls(self.run_front("streams"), 120)

    def test_hints_executor(self):
        self.check_entered_calls(self.run_front("executor"), 120, executor=True)

    def test_hints_protocol(self):
        self.check_entered_calls(self.run_front("protocol"), 120)

    def test_hints_sockets(self):
        """loop.sock_connect / sock_sendall: the first send of sock_sendall runs inside E ... L."""
        self.check_entered_calls(self.run_front("sockets"), 120)


if __name__ == "__main__":
    unittest.main()
