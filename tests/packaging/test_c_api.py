"""A C program built against the installed txray.h alone (no source tree on the include path), once through
pkg-config and once through CMake's find_package(txray); both run under the installed agent (the path
pkg-config and the package config give) and their transactions are stored."""
import os
import shutil
import subprocess
import unittest

from pkgtest import InstalledTree, PackagingTestCase, clean_env, extract, multiarch_dir, wait_for

PROGRAM = r"""
#include <stdio.h>
#include <txray/txray.h>

int main(void) {
  int b = txray_begin("installed api job");
  int s = txray_step("built against the installed header");
  int e = txray_end(0, NULL);
  printf("begin=%d step=%d end=%d\n", b, s, e);
  return 0;
}
"""

CMAKELISTS = """
cmake_minimum_required(VERSION 3.16)
project(txray_consumer C)
find_package(txray 0.1 REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE txray::txray)
file(WRITE ${CMAKE_BINARY_DIR}/agent.txt "${TXRAY_AGENT_LIBRARY}")
"""


class InstalledCApi(PackagingTestCase):
    def setUp(self):
        super().setUp()
        self.root = extract(os.path.join(self.tmp, "root"), "txray-agent", "txray")
        self.tree = InstalledTree(self.root)
        self.src = os.path.join(self.tmp, "src")
        os.mkdir(self.src)
        with open(os.path.join(self.src, "consumer.c"), "w") as f:
            f.write(PROGRAM)

    def run_under_agent(self, program, agent, app):
        self.assertTrue(os.path.exists(agent), agent)
        r = subprocess.run([program], capture_output=True, text=True, env=clean_env(), timeout=30)
        self.assertEqual(r.stdout.strip(), "begin=0 step=0 end=0")  # no agent: every call a no-op
        work = os.path.join(self.tmp, "work-" + app)
        os.mkdir(work)
        with self.tree.collector(work) as c:
            env = clean_env({"LD_PRELOAD": agent, "TXRAY_COLLECTOR": c.endpoint, "TXRAY_APP": app})
            r = subprocess.run([program], capture_output=True, text=True, env=env, timeout=30)
            self.assertEqual(r.stdout.strip(), "begin=1 step=1 end=1", r.stderr)
            wait_for(lambda: self.tree.count(c.db) >= 1, what="the api transaction")
        txs = self.tree.show_json(c.db, "--last", "5")
        self.assertEqual([t["name"] for t in txs], ["installed api job"])
        self.assertEqual(txs[0]["app"], app)
        self.assertEqual([s["text"] for s in txs[0]["steps"] if s["kind"] == "MESSAGE"],
                         ["built against the installed header"])

    def test_pkg_config(self):
        pcdir = os.path.join(multiarch_dir(self.root), "pkgconfig")
        # The .pc names /usr paths; PKG_CONFIG_SYSROOT_DIR maps them into the root it was installed to.
        env = clean_env({"PKG_CONFIG_PATH": pcdir, "PKG_CONFIG_LIBDIR": pcdir, "PKG_CONFIG_SYSROOT_DIR": self.root,
                         "PKG_CONFIG_ALLOW_SYSTEM_CFLAGS": "1"})

        def pc(*args):
            r = subprocess.run(["pkg-config", *args, "txray"], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.split()
        cflags, libs = pc("--cflags"), pc("--libs")
        self.assertEqual(cflags, [f"-I{self.root}/usr/include"])
        self.assertEqual(pc("--modversion"), ["0.1.0"])
        agent = pc("--variable=agent")[0]
        self.assertEqual(agent, os.path.join(self.root, os.path.relpath(multiarch_dir(self.root), self.root),
                                             "txray", "libtxray-agent.so"))
        program = os.path.join(self.tmp, "consumer-pc")
        r = subprocess.run(["cc", "-Wall", "-Werror", "-o", program, os.path.join(self.src, "consumer.c"),
                            *cflags, *libs], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.run_under_agent(program, agent, "pc-consumer")

    @unittest.skipUnless(shutil.which("cmake"), "cmake is not installed")
    def test_find_package(self):
        with open(os.path.join(self.src, "CMakeLists.txt"), "w") as f:
            f.write(CMAKELISTS)
        build = os.path.join(self.tmp, "build")
        r = subprocess.run(["cmake", "-S", self.src, "-B", build, f"-DCMAKE_PREFIX_PATH={self.root}/usr",
                            "-DCMAKE_C_FLAGS=-Wall -Werror"], capture_output=True, text=True, env=clean_env(),
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run(["cmake", "--build", build], capture_output=True, text=True, env=clean_env(), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(build, "agent.txt")) as f:
            agent = f.read()
        self.assertTrue(agent.startswith(self.root + "/"), agent)  # relocatable: found under the root
        self.run_under_agent(os.path.join(build, "consumer"), agent, "cmake-consumer")
