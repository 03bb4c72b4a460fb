"""The collector's unit and the preload drop-in, checked by systemd itself: `systemd-analyze verify` on the
installed txray-collector.service (no warnings), then a unit that runs a Python HTTP server with the drop-in
`txray enable` writes: systemd's own dump of the unit (SYSTEMD_LOG_LEVEL=debug) gives the environment it
would start the server with, the server is run with exactly that environment, and its request is stored.
systemd is not PID 1 on the test machines, so units are verified, not started (docs/install.md)."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import unittest

from pkgtest import (PYTHON, InstalledTree, PackagingTestCase, clean_env, extract, free_port, multiarch_dir,
                     wait_port)

HARDENING = ["NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
             "PrivateDevices=yes", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "CapabilityBoundingSet=",
             "MemoryDenyWriteExecute=yes", "SystemCallFilter=@system-service", "User=txray",
             "StateDirectory=txray"]


def verify(unit_path, extra_env=None):
    """`systemd-analyze verify` of a unit file (and its UNIT.d/ drop-ins beside it): (rc, output, env), with
    output what it says at its normal log level (nothing when all is well) and env the Environment=
    assignments systemd resolved, from its debug dump of the unit."""
    env = dict(os.environ, **(extra_env or {}))
    r = subprocess.run(["systemd-analyze", "verify", unit_path], capture_output=True, text=True, timeout=120, env=env)
    debug = subprocess.run(["systemd-analyze", "verify", unit_path], capture_output=True, text=True, timeout=120,
                           env=dict(env, SYSTEMD_LOG_LEVEL="debug", SYSTEMD_LOG_COLOR="0"))
    assigned = {}
    for line in re.findall(r"(?m)^\s*Environment: (.*)$", debug.stdout + debug.stderr):
        k, _, v = line.partition("=")
        assigned[k] = v
    return r.returncode, (r.stdout + r.stderr).strip(), assigned


def problems(output):
    """Every line systemd-analyze printed at its normal level: warnings about keys, values, programs."""
    return [l for l in output.splitlines() if l.strip()]


@unittest.skipUnless(shutil.which("systemd-analyze"), "systemd-analyze is not installed")
class SystemdUnits(PackagingTestCase):
    def setUp(self):
        super().setUp()
        self.root = extract(os.path.join(self.tmp, "root"), "txray-agent", "txray")
        self.tree = InstalledTree(self.root)

    def test_collector_unit_verifies(self):
        installed = os.path.join(self.root, "usr", "lib", "systemd", "system", "txray-collector.service")
        with open(installed) as f:
            text = f.read()
        for line in HARDENING:
            self.assertIn("\n" + line + "\n", text)
        m = re.search(r"(?m)^ExecStart=(.*)$", text)
        argv = shlex.split(m.group(1))
        self.assertEqual(argv[0], "/usr/bin/txray")  # the packaged path, whatever prefix the build had
        self.assertEqual(argv[1:], ["collect", "--listen", "tcp://127.0.0.1:7878", "--db", "/var/lib/txray/txray.db"])
        # Verified on this machine with ExecStart pointing at the installed copy (systemd checks it exists).
        unit = os.path.join(self.tmp, "txray-collector.service")
        with open(unit, "w") as f:
            f.write(text.replace("ExecStart=/usr/bin/txray", "ExecStart=" + self.tree.txray))
        # Documentation=man:txray(1) is checked too: `man` looks in the installed root's man pages.
        rc, out, _ = verify(unit, {"MANPATH": os.path.join(self.root, "usr", "share", "man")})
        self.assertEqual(rc, 0, out)
        self.assertEqual(problems(out), [], out)
        # systemd's own hardening score of the unit (0 = locked down, 10 = exposed): 1.5 when written.
        r = subprocess.run(["systemd-analyze", "security", "--offline=true", unit], capture_output=True, text=True,
                           timeout=120)
        m = re.search(r"Overall exposure level for txray-collector.service: ([0-9.]+)", r.stdout + r.stderr)
        self.assertIsNotNone(m, r.stdout + r.stderr)
        print("systemd-analyze security: exposure", m.group(1))
        self.assertLessEqual(float(m.group(1)), 2.0, r.stdout)

        # The unit's command line, run from the installed tree (state directory and port moved here): it
        # listens, and SIGTERM (systemctl stop) makes it store and exit 0.
        port = free_port()
        args = [a.replace("/var/lib/txray", self.tmp).replace(":7878", f":{port}") for a in argv[1:]]
        p = self.spawn([self.tree.txray, *args], env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_port(port)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=60), 0, p.stderr.read())
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "txray.db")))

    def test_preload_drop_in_on_a_python_server_unit(self):
        site = os.path.join(self.tmp, "site-pyweb")
        os.makedirs(site)
        units = os.path.join(self.tmp, "units")
        os.makedirs(units)
        unit = os.path.join(units, "pyweb.service")
        with open(unit, "w") as f:
            f.write("[Unit]\nDescription=a Python HTTP server\n\n[Service]\n"
                    f"WorkingDirectory={site}\nExecStart={PYTHON} -m http.server --bind 127.0.0.1 8000\n"
                    "Environment=PYTHONUNBUFFERED=1\n\n[Install]\nWantedBy=multi-user.target\n")
        rc, out, before = verify(unit)
        self.assertEqual(rc, 0, out)
        self.assertNotIn("LD_PRELOAD", before)

        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        with self.tree.collector(work) as c:
            r = subprocess.run([self.tree.txray, "enable", "--unit-dir", units, "--collector", c.endpoint,
                                "--runtime-hints", "pyweb"], capture_output=True, text=True, env=clean_env())
            self.assertEqual(r.returncode, 0, r.stderr)
            drop_in = os.path.join(units, "pyweb.service.d", "txray.conf")
            self.assertIn(f"wrote {drop_in}", r.stdout)
            rc, out, env = verify(unit)
            self.assertEqual(rc, 0, out)
            self.assertEqual(problems(out), [], out)
            agent = os.path.join(multiarch_dir(self.root), "txray", "libtxray-agent.so")
            self.assertEqual(env["LD_PRELOAD"], agent)
            self.assertEqual(env["TXRAY_APP"], "pyweb")
            self.assertEqual(env["TXRAY_COLLECTOR"], c.endpoint)
            self.assertEqual(env["PYTHONPATH"], os.path.join(os.path.dirname(agent), "runtimes", "python"))
            self.assertEqual(env["PYTHONUNBUFFERED"], "1")  # the unit's own settings stay
            # The server, started with the environment systemd would give it.
            tx = self.serve_and_request(self.tree, c, [], clean_env(env), "pyweb")
        self.assertEqual(tx["app"], "pyweb")
        self.assertEqual(tx["status"], 200)

        r = subprocess.run([self.tree.txray, "disable", "--unit-dir", units, "pyweb"], capture_output=True,
                           text=True, env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(units, "pyweb.service.d")))
        rc, out, after = verify(unit)
        self.assertEqual(rc, 0, out)
        self.assertNotIn("LD_PRELOAD", after)
        # Names that are not units, or would leave the unit directory, are refused.
        for bad in ("../etc/passwd", "a/b", "", ".hidden"):
            r = subprocess.run([self.tree.txray, "enable", "--unit-dir", units, bad], capture_output=True,
                               text=True, env=clean_env())
            self.assertEqual(r.returncode, 2, bad)

    def test_documented_example_drop_in(self):
        """The example drop-in shipped in /usr/share/doc/txray/examples/ resolves to the packaged agent."""
        example = os.path.join(self.root, "usr", "share", "doc", "txray", "examples", "txray-preload.conf")
        units = os.path.join(self.tmp, "units")
        os.makedirs(os.path.join(units, "myapp.service.d"))
        shutil.copy(example, os.path.join(units, "myapp.service.d", "txray.conf"))
        unit = os.path.join(units, "myapp.service")
        with open(unit, "w") as f:
            f.write(f"[Service]\nExecStart={PYTHON} -m http.server\n")
        rc, out, env = verify(unit)
        self.assertEqual(rc, 0, out)
        self.assertEqual(problems(out), [], out)
        rel = os.path.relpath(multiarch_dir(self.root), self.root)
        self.assertEqual(env["LD_PRELOAD"], f"/{rel}/txray/libtxray-agent.so")
        self.assertEqual(env["TXRAY_APP"], "myapp")
