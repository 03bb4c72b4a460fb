"""scripts/check_layers.py fails on each kind of edge the agent's layers forbid, and passes the tree."""
import os
import shutil
import subprocess
import tempfile
import unittest

SRC = os.environ.get("TXRAY_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CHECK = os.path.join(SRC, "scripts", "check_layers.py")


class Layers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.agent = os.path.join(self.tmp, "agent")
        shutil.copytree(os.path.join(SRC, "agent"), self.agent,
                        ignore=shutil.ignore_patterns("node_modules", "*.js", "*.py"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def check(self):
        return subprocess.run(["/usr/bin/python3", CHECK, self.agent], capture_output=True, text=True)

    def add_include(self, rel, header):
        with open(os.path.join(self.agent, rel), "a") as f:
            f.write(f'\n#include "{header}"\n')

    def test_the_tree_passes(self):
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn(" 0 not allowed", r.stdout)

    def test_forbidden_edges_fail(self):
        cases = [
            ("core/recorder.cpp", "protocols/http1/http_parse.h"),        # core names a protocol
            ("cpu/clock.cpp", "protocols/dispatch/socket_events.h"),      # cpu names a protocol
            ("cpu/cpu_sampler.cpp", "core/transaction.h"),                # cpu knows no transaction
            ("protocols/sql/sql_lexer.cpp", "protocols/http1/http_parse.h"),  # protocol to protocol, no seam
            ("protocols/http2/h2_frames.cpp", "protocols/http1/http_conn.h"),  # the seam goes one way only
            ("core/transaction.cpp", "transport/encode.h"),               # core reads no transport
            ("protocols/http1/http_conn.cpp", "hints/hint_protocol.h"),   # only dispatch reads the board
            ("core/recorder.cpp", "recorder.h"),                          # a path not from agent/
        ]
        for rel, header in cases:
            with self.subTest(rel=rel, header=header):
                path = os.path.join(self.agent, rel)
                with open(path) as f:
                    kept = f.read()
                self.add_include(rel, header)
                r = self.check()
                with open(path, "w") as f:
                    f.write(kept)
                self.assertEqual(r.returncode, 1, r.stdout)
                self.assertIn(rel + ":", r.stdout)
                self.assertIn(" 1 not allowed", r.stdout)

    def test_named_seams_pass(self):
        self.add_include("protocols/http1/http_parse.cpp", "protocols/tracecontext/traceparent.h")
        self.add_include("protocols/dispatch/http_out.cpp", "protocols/sql/sql_lexer.h")
        self.add_include("hooks/pq_hooks.cpp", "protocols/sql/sql_binds.h")
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout)


if __name__ == "__main__":
    unittest.main()
