"""Shared helpers of the packaging tests: the Debian packages the packaging.cpack fixture built
(TXRAY_DEB_DIR), fresh roots to install them into, and a collector/server run from an installed tree.
Nothing here uses the build tree's binaries: every program comes from the root it was installed to."""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BUILD_DIR = os.environ.get("TXRAY_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE_DIR = os.environ.get("TXRAY_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DEB_DIR = os.environ.get("TXRAY_DEB_DIR", os.path.join(BUILD_DIR, "packaging-test", "debs"))
PYTHON = "/usr/bin/python3"
PACKAGES = ("txray-agent", "txray", "txray-viewer")


def debs():
    """{package name: .deb path} of the packages the fixture built."""
    out = {}
    for path in glob.glob(os.path.join(DEB_DIR, "*.deb")):
        name = subprocess.run(["dpkg-deb", "-f", path, "Package"], check=True, capture_output=True,
                              text=True).stdout.strip()
        out[name] = path
    return out


def control(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], check=True, capture_output=True, text=True).stdout.strip()


def contents(deb):
    """The paths a package installs (./usr/bin/txray -> usr/bin/txray), directories excluded."""
    out = subprocess.run(["dpkg-deb", "-c", deb], check=True, capture_output=True, text=True).stdout
    paths = []
    for line in out.splitlines():
        path = line.split(None, 5)[5].split(" -> ")[0]
        if not line.startswith("d"):
            paths.append(path[2:] if path.startswith("./") else path)
    return paths


def extract(root, *names):
    """dpkg -x the named packages into ROOT (no maintainer scripts) and return ROOT."""
    d = debs()
    for n in names:
        subprocess.run(["dpkg", "-x", d[n], root], check=True)
    return root


def multiarch_dir(root):
    """ROOT/usr/lib/<multiarch>, where the agent's package put txray/."""
    found = glob.glob(os.path.join(root, "usr", "lib", "*", "txray", "libtxray-agent.so"))
    if len(found) != 1:
        raise AssertionError(f"expected one agent under {root}/usr/lib/*/txray, found {found}")
    return os.path.dirname(os.path.dirname(found[0]))


def clean_env(extra=None):
    """The test's environment without anything that points into the build tree or preloads a library."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TXRAY_") and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "NODE_OPTIONS")}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    if extra:
        env.update(extra)
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The e2e suite's waits (no build-tree binaries in them), with the longer default a package test needs.
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "e2e"))
import txraytest  # noqa: E402


def wait_for(pred, timeout=30.0, what="condition"):
    return txraytest.wait_for(pred, timeout, what=what)


def wait_port(port, timeout=30.0):
    txraytest.wait_port(port, timeout)


class InstalledTree:
    """Programs of an installed root: ROOT/usr/bin/txray and friends."""

    def __init__(self, root):
        self.root = root
        self.txray = os.path.join(root, "usr", "bin", "txray")

    def show_json(self, db, *args):
        out = subprocess.run([self.txray, "show", "--db", db, "--json", *args], check=True, capture_output=True,
                             text=True, env=clean_env(), timeout=60).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def count(self, db):
        if not os.path.exists(db):
            return 0
        r = subprocess.run([self.txray, "show", "--db", db, "--json", "--last", "1000"], capture_output=True,
                           text=True, env=clean_env(), timeout=60)
        return sum(1 for line in r.stdout.splitlines() if line.strip()) if r.returncode == 0 else 0

    def collector(self, workdir):
        return Collector(self, workdir)


class Collector:
    """`txray collect` of an installed tree on a private ipc:// endpoint."""

    def __init__(self, tree, workdir):
        self.tree = tree
        self.endpoint = f"ipc://{workdir}/collector.sock"
        self.db = os.path.join(workdir, "txray.db")
        self.log = os.path.join(workdir, "collector.log")
        self.proc = None

    def __enter__(self):
        self._logf = open(self.log, "ab")
        self.proc = subprocess.Popen([self.tree.txray, "collect", "--listen", self.endpoint, "--db", self.db,
                                      "--status-interval", "1"], stdout=self._logf, stderr=subprocess.STDOUT,
                                     env=clean_env())
        wait_for(lambda: os.path.exists(self.endpoint[len("ipc://"):]), what="collector socket")
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()


class PackagingTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="txray-pkg-")
        self.procs = []
        d = debs()
        for name in ("txray-agent", "txray"):
            self.assertIn(name, d, f"the packaging.cpack fixture made no {name} package in {DEB_DIR}")

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def spawn(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def serve_and_request(self, tree, collector, argv_prefix, env, app, path="/hello.txt"):
        """Runs `python3 -m http.server` (argv_prefix + the server command) with ENV, asks it for PATH
        with curl and waits for the transaction in the collector's store. Returns it."""
        site = os.path.join(self.tmp, "site-" + app)
        os.makedirs(site, exist_ok=True)
        with open(os.path.join(site, "hello.txt"), "w") as f:
            f.write("hello from the installed tree\n")
        port = free_port()
        log = open(os.path.join(self.tmp, app + ".log"), "wb")
        server = self.spawn([*argv_prefix, PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                            cwd=site, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_port(port)
        out = subprocess.run(["curl", "-sS", "--max-time", "20", f"http://127.0.0.1:{port}{path}"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.stdout, "hello from the installed tree\n", out.stderr)
        wait_for(lambda: tree.count(collector.db) >= 1, what="a stored transaction")
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        log.close()
        txs = tree.show_json(collector.db, "--last", "10")
        named = [t for t in txs if t.get("name") == f"GET {path}"]
        self.assertTrue(named, f"no 'GET {path}' transaction in {txs}")
        return named[0]
