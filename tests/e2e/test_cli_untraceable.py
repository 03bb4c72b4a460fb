"""`txray run` and `txray enable` say before the exec when LD_PRELOAD cannot reach the program, and why
(statically linked, set-uid/set-gid under the loader's secure mode, a Go program), and still run it. The
set-uid case is checked against what the loader really does: a probe program reports AT_SECURE and
whether the preloaded library is mapped."""
import os
import shutil
import stat
import subprocess
import unittest

from txraytest import TXRAY, TxrayTestCase, bare_env

PRELOADED = "/lib/x86_64-linux-gnu/libz.so.1"  # stands in for the agent: not otherwise in the probe

PROBE_C = r"""
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
static int found;
static int seen(struct dl_phdr_info* i, size_t n, void* d) {
  (void)n; (void)d;
  if (strstr(i->dlpi_name, "libz.so")) found = 1;
  return 0;
}
#ifdef GO_SECTION
__attribute__((used, section(".go.buildinfo"))) static const char buildinfo[32] = "\xff Go buildinf:";
#endif
int main(void) {
  dl_iterate_phdr(seen, 0);
  printf("secure=%lu preloaded=%s\n", getauxval(AT_SECURE), found ? "yes" : "no");
  return 5;
}
"""

STATIC_C = '#include <stdio.h>\nint main(void) { puts("static ran"); return 5; }\n'

NOTE = "cannot be traced: "


class CliUntraceable(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.env = bare_env({"TXRAY_AGENT": PRELOADED})

    def cc(self, name, source, *flags):
        src = os.path.join(self.tmp, name + ".c")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(self.tmp, name)
        subprocess.run(["gcc", "-O1", *flags, "-o", out, src], check=True, capture_output=True, timeout=120)
        return out

    def run_txray(self, *cmd):
        return subprocess.run([TXRAY, "run", "--", *cmd], capture_output=True, text=True, env=self.env, timeout=60)

    def notes(self, stderr):
        return [l for l in stderr.splitlines() if NOTE in l]

    def test_a_dynamic_program_gets_no_note_and_the_library(self):
        probe = self.cc("probe", PROBE_C)
        r = self.run_txray(probe)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(r.stdout, "secure=0 preloaded=yes\n")
        self.assertEqual(self.notes(r.stderr), [])

    def test_static_binary(self):
        prog = self.cc("static", STATIC_C, "-static")
        r = self.run_txray(prog)
        self.assertEqual(r.returncode, 5, r.stderr)           # it still runs
        self.assertEqual(r.stdout, "static ran\n")
        self.assertEqual(self.notes(r.stderr), [
            "txray run: %s cannot be traced: it is statically linked (no dynamic loader), so LD_PRELOAD cannot "
            "load the agent into it. It runs, but nothing will be recorded." % prog])
        # found on PATH as execvp finds it
        self.env["PATH"] = self.tmp + ":" + self.env.get("PATH", "/usr/bin:/bin")
        r = self.run_txray("static")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(len(self.notes(r.stderr)), 1, r.stderr)
        self.assertIn("txray run: static cannot be traced: it is statically linked", r.stderr)

    def test_go_program(self):
        prog = self.cc("gosection", PROBE_C, "-DGO_SECTION")
        r = self.run_txray(prog)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(self.notes(r.stderr), [
            "txray run: %s cannot be traced: it is a Go program: Go makes its system calls directly, not "
            "through libc, so the agent sees none of its sockets even when it is loaded. It runs, but nothing "
            "will be recorded." % prog])

    def test_a_script_and_a_missing_program_get_no_note(self):
        r = self.run_txray("/bin/sh", "-c", "exit 4")
        self.assertEqual(r.returncode, 4)
        self.assertEqual(self.notes(r.stderr), [])
        r = self.run_txray("/nonexistent/program")
        self.assertEqual(r.returncode, 127)
        self.assertEqual(self.notes(r.stderr), [])

    @unittest.skipUnless(os.geteuid() == 0, "chown of the set-uid copy needs root")
    def test_setuid_copy(self):
        probe = self.cc("probe", PROBE_C)
        os.chmod(self.tmp, 0o755)  # the set-uid copy runs as another user
        # Root running its own set-uid-root copy: the exec changes no identity, the loader is not in secure
        # mode and the library is loaded (seen on Debian 12) - no note.
        own = os.path.join(self.tmp, "probe-suid-root")
        shutil.copy(probe, own)
        os.chmod(own, 0o4755)
        r = self.run_txray(own)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(r.stdout, "secure=0 preloaded=yes\n")
        self.assertEqual(self.notes(r.stderr), [])
        # A set-uid copy owned by nobody: the exec changes the effective uid, AT_SECURE is set and the
        # loader ignores LD_PRELOAD - the note says so, and the program still runs.
        other = os.path.join(self.tmp, "probe-suid-nobody")
        shutil.copy(probe, other)
        os.chown(other, 65534, -1)
        os.chmod(other, 0o4755)
        self.assertTrue(os.stat(other).st_mode & stat.S_ISUID)
        r = self.run_txray(other)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(r.stdout, "secure=1 preloaded=no\n")
        self.assertEqual(self.notes(r.stderr), [
            "txray run: %s cannot be traced: it is set-uid (owner uid 65534), and the dynamic loader ignores "
            "LD_PRELOAD for set-uid programs. It runs, but nothing will be recorded." % other])
        # set-gid to another group: the same
        gid = os.path.join(self.tmp, "probe-sgid")
        shutil.copy(probe, gid)
        os.chown(gid, -1, 65534)
        os.chmod(gid, 0o2755)
        r = self.run_txray(gid)
        self.assertEqual(r.stdout, "secure=1 preloaded=no\n")
        self.assertEqual(len(self.notes(r.stderr)), 1, r.stderr)
        self.assertIn("it is set-gid (group gid 65534)", r.stderr)

    def test_enable_names_the_units_program(self):
        prog = self.cc("static", STATIC_C, "-static")
        units = os.path.join(self.tmp, "units")
        os.mkdir(units)
        with open(os.path.join(units, "shop.service"), "w") as f:
            f.write("[Service]\nExecStart=-%s --port 8080\n" % prog)
        r = subprocess.run([TXRAY, "enable", "--unit-dir", units, "shop"], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)                   # the drop-in is still written
        self.assertTrue(os.path.exists(os.path.join(units, "shop.service.d", "txray.conf")))
        self.assertEqual(self.notes(r.stderr), [
            "txray enable: %s (ExecStart of shop.service) cannot be traced: it is statically linked (no dynamic "
            "loader), so LD_PRELOAD cannot load the agent into it. Nothing will be recorded." % prog])
        with open(os.path.join(units, "web.service"), "w") as f:
            f.write("[Service]\nExecStart=/bin/sleep 1\n")
        r = subprocess.run([TXRAY, "enable", "--unit-dir", units, "web"], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.notes(r.stderr), [])


if __name__ == "__main__":
    unittest.main()
