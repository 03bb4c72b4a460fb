"""Helpers for the samples' tests: start a sample server, learn its ports from its "listening on" lines,
call it, and stop it (SIGTERM to its process group, SIGKILL if it lingers).

Used by tests/samples/test_*.py (bare) and tests/e2e/test_samples_*.py (under the agent).
"""
import http.client
import json
import os
import re
import select
import signal
import subprocess
import time

BUILD_DIR = os.environ.get("TXRAY_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE_DIR = os.environ.get("TXRAY_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(BUILD_DIR, "bin")
PYTHON = "/usr/bin/python3"
PY_ORDERS = os.path.join(SOURCE_DIR, "samples", "py_orders", "orders_service.py")
# Generated once per build tree and shared by the tests (generation is atomic: temp file + rename).
DATA_DIR = os.path.join(BUILD_DIR, "samples-data")

_LISTEN = re.compile(rb"listening on (\w+) port (\d+)")


class Server:
    """A sample server started in its own process group; ports maps "http"/"tcp" to port numbers."""

    def __init__(self, args, channels=("http",), env=None, timeout=120.0, log=None):
        self.args = args
        self.ports = {}
        self._log = open(log, "ab") if log else None
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self._log or subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        buf = b""
        while set(channels) - set(self.ports):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.stop()
                raise AssertionError(f"{args[0]} did not announce {channels} (output so far: {buf!r})")
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                buf += chunk
                for m in _LISTEN.finditer(buf):
                    self.ports[m.group(1).decode()] = int(m.group(2))
        self.port = self.ports.get("http") or self.ports.get("tcp")

    def addr(self, channel="http"):
        return f"127.0.0.1:{self.ports[channel]}"

    def stop(self, timeout=15.0):
        """SIGTERM, wait; returns the exit code. SIGKILL (and an AssertionError) if it does not exit."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                raise AssertionError(f"{self.args[0]} did not exit on SIGTERM")
        if self.proc.stdout:
            self.proc.stdout.close()
        if self._log:
            self._log.close()
            self._log = None
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def http_get(port, path, headers=None, timeout=60):
    """(status, headers dict with lower-case names, body bytes) of one GET on a fresh connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def http_post(port, path, body, headers=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def orders_call(channel, method, arg, n=None, tcp=None, http=None, env=None):
    """One call through txray-orders-bench --call: the decoded result as a dict."""
    args = [os.path.join(BIN, "txray-orders-bench")]
    if tcp:
        args += ["--tcp", tcp]
    if http:
        args += ["--http", http]
    args += ["--call", channel, method, str(arg)] + ([str(n)] if n is not None else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env, timeout=60).stdout
    return json.loads(out)


def orders_bench(tcp=None, http=None, channels=None, methods=None, clients=4, seconds=0.3, rounds=3, env=None,
                 server_pid=None):
    """The driver's table as a dict {(channel, method, n): row}."""
    args = [os.path.join(BIN, "txray-orders-bench"), "--json", "--clients", str(clients), "--seconds", str(seconds),
            "--rounds", str(rounds)]
    if tcp:
        args += ["--tcp", tcp]
    if http:
        args += ["--http", http]
    if server_pid:
        args += ["--server-pid", str(server_pid)]
    if channels:
        args += ["--channels", ",".join(channels)]
    if methods:
        args += ["--methods", ",".join(methods)]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"txray-orders-bench failed ({r.returncode}): {r.stderr}")
    rows = json.loads(r.stdout)["rows"]
    return {(row["channel"], row["method"], row["n"]): row for row in rows}


def orders_db():
    """Path of the shared sample database (generated by the first server that starts on it)."""
    os.makedirs(DATA_DIR, exist_ok=True)
    return os.path.join(DATA_DIR, "orders.db")
