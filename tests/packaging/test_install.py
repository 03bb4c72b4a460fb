"""The Debian packages installed into a fresh root with dpkg (--root, maintainer scripts run chrootless
with DPKG_ROOT set) and run from that root alone: `txray collect`, `txray run -- python3 -m http.server`,
a request with curl and `txray show` store and print a transaction; the viewer renders the store; the
packages' Depends come from their binaries; purging them leaves nothing behind."""
import os
import re
import subprocess

from pkgtest import (PACKAGES, PackagingTestCase, InstalledTree, clean_env, contents, control, debs,
                     multiarch_dir)

MA = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"

# Every file each package must install (the rest of the docs come along but are not listed here).
EXPECTED = {
    "txray-agent": [f"usr/lib/{MA}/txray/libtxray-agent.so",
                    f"usr/lib/{MA}/txray/runtimes/node/txray-hints.js",
                    f"usr/lib/{MA}/txray/runtimes/python/sitecustomize.py",
                    f"usr/lib/{MA}/txray/runtimes/python/_txray_hints.py",
                    "usr/include/txray/txray.h",
                    f"usr/lib/{MA}/pkgconfig/txray.pc",
                    f"usr/lib/{MA}/cmake/txray/txrayConfig.cmake",
                    f"usr/lib/{MA}/cmake/txray/txrayConfigVersion.cmake",
                    "usr/share/doc/txray-agent/copyright", "usr/share/doc/txray-agent/changelog.Debian.gz"],
    "txray": ["usr/bin/txray", "usr/share/man/man1/txray.1.gz",
              "usr/lib/systemd/system/txray-collector.service", "usr/lib/sysusers.d/txray.conf",
              "usr/share/doc/txray/examples/txray-preload.conf", "usr/share/doc/txray/README.md",
              "usr/share/doc/txray/docs/install.md", "usr/share/doc/txray/docs/agent.md",
              "usr/share/doc/txray/copyright", "usr/share/doc/txray/changelog.Debian.gz"],
    "txray-viewer": ["usr/bin/txray-viewer", "usr/share/applications/txray-viewer.desktop",
                     "usr/share/icons/hicolor/scalable/apps/txray-viewer.svg",
                     "usr/share/man/man1/txray-viewer.1.gz",
                     "usr/share/doc/txray-viewer/copyright", "usr/share/doc/txray-viewer/changelog.Debian.gz"],
}


def depends(deb):
    """Package names of a Depends field (alternatives and versions dropped)."""
    return {re.split(r"[ (]", alt.strip())[0] for part in control(deb, "Depends").split(",") if part.strip()
            for alt in part.split("|")}


class Packages(PackagingTestCase):
    def test_contents_and_depends(self):
        d = debs()
        for name in PACKAGES:
            if name not in d:
                continue  # the viewer is optional (TXRAY_BUILD_VIEWER=OFF, or no Qt)
            files = contents(d[name])
            for f in EXPECTED[name]:
                self.assertIn(f, files, f"{name} does not install {f}")
        # The agent links the C library only (static libstdc++): its package needs libc6 and nothing else.
        self.assertEqual(depends(d["txray-agent"]), {"libc6"})
        self.assertRegex(control(d["txray-agent"], "Depends"), r"^libc6 \(>= [0-9.]+\)$")
        # The CLI: its libraries, found by dpkg-shlibdeps, and the agent `txray run` preloads.
        cli = depends(d["txray"])
        for lib in ("txray-agent", "libc6", "libstdc++6", "libzmq5", "libsqlite3-0"):
            self.assertIn(lib, cli)
        self.assertTrue(any(p.startswith("libprotobuf") for p in cli), cli)
        self.assertFalse(any(p.startswith("libqt6") for p in cli), cli)
        if "txray-viewer" in d:
            viewer = depends(d["txray-viewer"])
            for lib in ("libqt6core6", "libqt6gui6", "libqt6widgets6", "libsqlite3-0"):
                self.assertIn(lib, viewer)

    def test_install_run_show_and_purge(self):
        root = os.path.join(self.tmp, "root")
        admin = os.path.join(root, "var", "lib", "dpkg")
        for sub in ("info", "updates", "triggers"):
            os.makedirs(os.path.join(admin, sub))
        for f in ("status", "available"):
            open(os.path.join(admin, f), "w").close()
        os.makedirs(os.path.join(root, "var", "log"))
        os.makedirs(os.path.join(root, "etc"))  # a root has /etc: systemd-sysusers --root writes passwd there
        dpkg = ["dpkg", f"--root={root}", "--force-script-chrootless", "--force-depends", "--force-not-root"]
        d = debs()
        names = [n for n in PACKAGES if n in d]
        r = subprocess.run([*dpkg, "-i", *[d[n] for n in names]], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        status = subprocess.run(["dpkg-query", f"--admindir={admin}", "-W", "-f", "${Package} ${Status}\n"],
                                capture_output=True, text=True, check=True).stdout
        for n in names:
            self.assertIn(f"{n} install ok installed", status)
        for n in names:
            for f in EXPECTED[n]:
                self.assertTrue(os.path.exists(os.path.join(root, f)), f"{f} not installed")
        # The postinst made the collector's user inside the root (systemd-sysusers --root), not here.
        if os.path.exists("/usr/bin/systemd-sysusers") or os.path.exists("/bin/systemd-sysusers"):
            with open(os.path.join(root, "etc", "passwd")) as f:
                self.assertRegex(f.read(), r"(?m)^txray:x:\d+:\d+:txray collector:/var/lib/txray:")

        tree = InstalledTree(root)
        self.assertEqual(multiarch_dir(root), os.path.join(root, "usr", "lib", MA))
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        with tree.collector(work) as c:
            r = subprocess.run([tree.txray, "run", "--collector", c.endpoint, "--app", "installed", "--",
                                "/bin/true"], capture_output=True, text=True, env=clean_env(), timeout=60)
            agent = os.path.join(root, "usr", "lib", MA, "txray", "libtxray-agent.so")
            self.assertIn(f"with the agent ({agent})", r.stderr)  # the installed agent, found from the CLI
            env = clean_env()
            tx = self.serve_and_request(tree, c, [tree.txray, "run", "--collector", c.endpoint, "--app",
                                                  "installed", "--"], env, "installed")
        self.assertEqual(tx["app"], "installed")
        self.assertEqual(tx["kind"], "http")
        self.assertEqual(tx["status"], 200)
        self.assertGreaterEqual(tx["bytes_written"], len("hello from the installed tree\n"))
        text = subprocess.run([tree.txray, "show", "--db", c.db, "--last", "1"], capture_output=True, text=True,
                              env=clean_env(), timeout=60)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("TRANSACTION    : GET /hello.txt", text.stdout)
        self.assertIn("APPLICATION    : installed", text.stdout)

        # The Python shim the installed CLI put in PYTHONPATH is the installed one.
        r = subprocess.run([tree.txray, "run", "--", "/usr/bin/python3", "-c",
                            "import os; print(os.environ['PYTHONPATH'])"], capture_output=True, text=True,
                           env=clean_env(), timeout=60)
        self.assertEqual(r.stdout.strip(), os.path.join(root, "usr", "lib", MA, "txray", "runtimes", "python"))

        if "txray-viewer" in names:  # the installed viewer renders the store
            shot = os.path.join(self.tmp, "viewer.png")
            r = subprocess.run([os.path.join(root, "usr", "bin", "txray-viewer"), "--screenshot", shot, c.db],
                               capture_output=True, text=True, env=clean_env({"QT_QPA_PLATFORM": "offscreen"}),
                               timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(os.path.getsize(shot), 10000)

        # Purge: every file the packages installed goes; what stays is dpkg's database and the user
        # the postinst made (Debian policy keeps system users).
        r = subprocess.run([*dpkg, "--purge", *reversed(names)], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        kept = ("var", "var/lib", "var/lib/dpkg", "var/log", "etc")  # dpkg's own, and the user's files
        left = []
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if rel not in kept and not rel.startswith(("var/lib/dpkg/", "var/log/", "etc/")):
                    left.append(rel)
        self.assertEqual(left, [], "left behind after purge")
        self.assertFalse(os.path.exists(os.path.join(root, "usr", "bin", "txray")))
