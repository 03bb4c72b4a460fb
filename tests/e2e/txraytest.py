"""Shared helpers for txray's end-to-end tests (run by CTest with /usr/bin/python3).

The tests start a real collector (`txray collect`) on a private ipc:// endpoint with a fresh SQLite file,
run real programs with the agent preloaded, and read the result back with `txray show --json`.
Paths come from the environment CTest sets: TXRAY_BUILD_DIR (the CMake binary dir) and TXRAY_SOURCE_DIR.
"""
import atexit
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import unittest

BUILD_DIR = os.environ.get("TXRAY_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE_DIR = os.environ.get("TXRAY_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TXRAY = os.path.join(BUILD_DIR, "bin", "txray")
AGENT = os.path.join(BUILD_DIR, "lib", "libtxray-agent.so")
BIN = os.path.join(BUILD_DIR, "bin")
SENDER = os.path.join(BIN, "txray-test-sender")  # synthetic agent batches (tests/collector/test_sender.cpp)
PYTHON = "/usr/bin/python3"  # Debian's dynamically linked python, never a pyenv shim


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout=20.0, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_port(port, timeout=20.0):
    def up():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False
    wait_for(up, timeout, what=f"port {port}")


class Collector:
    """A real `txray collect` on a private endpoint, writing to a fresh database."""

    def __init__(self, workdir, endpoint=None, db=None, extra_args=()):
        self.workdir = workdir
        self.extra_args = list(extra_args)
        self.endpoint = endpoint or f"ipc://{workdir}/collector.sock"
        self.db = db or os.path.join(workdir, "txray.db")
        self.proc = None
        self.log = os.path.join(workdir, "collector.log")

    def start(self):
        self._logf = open(self.log, "ab")
        self.proc = subprocess.Popen([TXRAY, "collect", "--listen", self.endpoint, "--db", self.db,
                                      "--status-interval", "1", *self.extra_args],
                                     stdout=self._logf, stderr=subprocess.STDOUT)
        if self.endpoint.startswith("ipc://"):
            wait_for(lambda: os.path.exists(self.endpoint[len("ipc://"):]), what="collector socket")
        else:
            time.sleep(0.3)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("collector did not exit on SIGINT")
        if self.proc:
            self._logf.close()
            rc = self.proc.returncode
            self.proc = None
            return rc
        return None

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        with open(self.log, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def agent_env(endpoint, app=None, mode=None, extra=None):
    env = dict(os.environ)
    env["LD_PRELOAD"] = AGENT
    env["TXRAY_COLLECTOR"] = endpoint
    if app:
        env["TXRAY_APP"] = app
    if mode:
        env["TXRAY_MODE"] = mode
    if extra:
        env.update(extra)
    return env


_shared_agent = None


def shared_agent():
    """A copy of the agent library (and the runtime shims staged beside it) that any user can load: for
    servers that drop to another user (PostgreSQL runs as `postgres`). The build tree may sit in a folder
    only its owner can enter (a clone in a mode-0700 home); ld.so in the other user's process then cannot
    open build/lib/libtxray-agent.so and ignores LD_PRELOAD. The copy lives in a fresh folder of mode 0755
    under the first temporary folder every user can reach and map code from, made once per test process
    and removed at its exit. The agent needs nothing else at run time (libc only)."""
    global _shared_agent
    if _shared_agent:
        return _shared_agent

    def reachable(path):  # every folder up to the root lets others through, and code may be mapped there
        p = os.path.realpath(path)
        try:
            if os.statvfs(p).f_flag & os.ST_NOEXEC:
                return False
            while True:
                if not os.stat(p).st_mode & stat.S_IXOTH:
                    return False
                if p == "/":
                    return True
                p = os.path.dirname(p)
        except OSError:
            return False
    base = next((d for d in (tempfile.gettempdir(), "/tmp", "/var/tmp") if reachable(d)), None)
    if base is None:
        raise RuntimeError("no temporary folder that every user can reach and map code from")
    folder = tempfile.mkdtemp(prefix="txray-agent-", dir=base)
    atexit.register(shutil.rmtree, folder, True)
    lib = os.path.join(folder, "libtxray-agent.so")
    shutil.copyfile(AGENT, lib)
    runtimes = os.path.join(os.path.dirname(AGENT), "txray", "runtimes")
    if os.path.isdir(runtimes):
        shutil.copytree(runtimes, os.path.join(folder, "txray", "runtimes"))
    for root, dirs, files in os.walk(folder):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o755 if f.endswith(".so") else 0o644)
    _shared_agent = lib
    return lib


def bare_env(extra=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if extra:
        env.update(extra)
    return env


def show_json(db, *args):
    """All transactions `txray show --json` prints for these arguments, as dicts."""
    out = subprocess.run([TXRAY, "show", "--db", db, "--json", *args], check=True,
                         capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def show_text(db, *args):
    return subprocess.run([TXRAY, "show", "--db", db, *args], check=True,
                          capture_output=True, text=True).stdout


def count_transactions(db, app=None, name_like=None):
    """Transactions stored in db so far (0 while it does not exist), of one app and with names LIKE a
    pattern when given."""
    import sqlite3
    if not os.path.exists(db):
        return 0
    # Containers of unattributed steps (kind 'unattributed') are no transactions.
    sql, args = "SELECT count(*) FROM transactions WHERE kind IS NOT 'unattributed'", []
    if app is not None:
        sql, args = sql + " AND app = ?", args + [app]
    if name_like is not None:
        sql, args = sql + " AND name LIKE ?", args + [name_like]
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(sql, args).fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def get_all(port, paths, clients):
    """GETs every path on 127.0.0.1:port over `clients` keep-alive connections at once (paths dealt out in
    turn); returns ({path: (status, body)}, [errors])."""
    import http.client
    import threading
    out, errors, lock = {}, [], threading.Lock()

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for p in paths[k::clients]:
                conn.request("GET", p)
                r = conn.getresponse()
                body = r.read().decode()
                with lock:
                    out[p] = (r.status, body)
        except Exception as e:  # noqa: BLE001 — the caller reports them
            errors.append(repr(e))
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out, errors


def wait_transactions(db, n, timeout=30.0):
    return wait_for(lambda: count_transactions(db) >= n, timeout, what=f"{n} transactions in {db}")


def send_batches(endpoint, *args):
    """Runs txray-test-sender against a collector; returns its JSON summary (see --print-txids)."""
    out = subprocess.run([SENDER, "--endpoint", endpoint, *map(str, args)], check=True,
                         capture_output=True, text=True, timeout=300).stdout
    return json.loads(out)


def check_sums(test, tx):
    """The profile's invariants: GAPs add up to the response time, CPU_Ts to the CPU time."""
    steps = tx["steps"]
    test.assertEqual(sum(s["gap_ns"] for s in steps), tx["elapsed_ns"], f"GAP sum of {tx['name']}")
    test.assertEqual(sum(s["cpu_ns"] for s in steps), tx["cpu_ns"], f"CPU_T sum of {tx['name']}")
    test.assertEqual(steps[0]["kind"], "START")
    test.assertEqual(steps[-1]["kind"], "END")


class TxrayTestCase(unittest.TestCase):
    """A test case with its own temporary folder (self.tmp), removed afterwards."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="txray-test-")
        self.tmp = self._tmp.name
        self._procs = []

    def tearDown(self):
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self._tmp.cleanup()

    def spawn(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self._procs.append(p)
        return p
