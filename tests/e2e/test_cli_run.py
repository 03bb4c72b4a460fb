"""`txray run`: preloads the agent (prepending to LD_PRELOAD), passes the settings on, says where the data
goes, and exits with the program's code; with the real agent, a curl run in process mode becomes one
stored transaction that `txray show` prints as a readable profile."""
import os
import re
import subprocess

from txraytest import (AGENT, PYTHON, TXRAY, Collector, TxrayTestCase, bare_env, check_sums, free_port,
                       show_json, show_text, wait_port, wait_transactions)

HARMLESS_LIB = "/lib/x86_64-linux-gnu/libm.so.6"  # stands in for the agent where only the environment is checked
OTHER_LIB = "/lib/x86_64-linux-gnu/libz.so.1"

PRINT_ENV = ("import os, sys\n"
             "for k in ('LD_PRELOAD', 'TXRAY_COLLECTOR', 'TXRAY_APP', 'TXRAY_MODE'):\n"
             "    print(k + '=' + os.environ.get(k, ''))\n"
             "sys.exit(int(sys.argv[1]))\n")


def txray_run(*args, env=None, timeout=120):
    return subprocess.run([TXRAY, "run", *args], capture_output=True, text=True, env=env, timeout=timeout)


class CliRun(TxrayTestCase):
    def test_environment_and_exit_code(self):
        env = bare_env({"TXRAY_AGENT": HARMLESS_LIB, "LD_PRELOAD": OTHER_LIB})
        r = txray_run("--collector", "ipc:///tmp/somewhere.sock", "--app", "shop", "--mode", "process", "--",
                      PYTHON, "-c", PRINT_ENV, "7", env=env)
        self.assertEqual(r.returncode, 7, r.stderr)
        lines = dict(l.split("=", 1) for l in r.stdout.splitlines())
        self.assertEqual(lines["LD_PRELOAD"], os.path.realpath(HARMLESS_LIB) + ":" + OTHER_LIB)
        self.assertEqual(lines["TXRAY_COLLECTOR"], "ipc:///tmp/somewhere.sock")
        self.assertEqual(lines["TXRAY_APP"], "shop")
        self.assertEqual(lines["TXRAY_MODE"], "process")
        self.assertIn("sending to ipc:///tmp/somewhere.sock", r.stderr)

        r = txray_run("--", PYTHON, "-c", PRINT_ENV, "0", env=bare_env({"TXRAY_AGENT": HARMLESS_LIB}))
        self.assertEqual(r.returncode, 0)
        self.assertIn("LD_PRELOAD=" + os.path.realpath(HARMLESS_LIB) + "\n", r.stdout)
        self.assertIn("sending to tcp://127.0.0.1:7878", r.stderr)  # the agent's default

    def test_errors(self):
        env = bare_env({"TXRAY_AGENT": HARMLESS_LIB})
        self.assertEqual(txray_run(env=env).returncode, 2)                              # no command
        self.assertEqual(txray_run("--", env=env).returncode, 2)
        self.assertEqual(txray_run("--mode", "nope", "--", "/bin/true", env=env).returncode, 2)
        r = txray_run("--", "/bin/true", env=bare_env({"TXRAY_AGENT": "/nonexistent/libtxray-agent.so"}))
        self.assertEqual(r.returncode, 2)
        self.assertIn("agent library not found", r.stderr)
        r = txray_run("--", "/nonexistent/program", env=env)
        self.assertEqual(r.returncode, 127)
        self.assertIn("cannot run", r.stderr)


@__import__("unittest").skipUnless(os.path.exists(AGENT), "the agent library is not built")
class CliRunWithAgent(TxrayTestCase):
    def test_exit_code_with_the_real_agent(self):
        with Collector(self.tmp) as c:
            r = txray_run("--collector", c.endpoint, "--", "/bin/sh", "-c", "exit 3", env=bare_env())
        self.assertEqual(r.returncode, 3, r.stderr)

    def test_runtime_shims_in_the_environment(self):
        """The shims staged next to the agent go first into NODE_OPTIONS and PYTHONPATH, after what was
        there, once; TXRAY_RUNTIME_HINTS=0 leaves both alone."""
        shims = os.path.join(os.path.dirname(os.path.realpath(AGENT)), "txray", "runtimes")
        node = f"--require {shims}/node/txray-hints.js"
        show = "import os; print(os.environ.get('NODE_OPTIONS')); print(os.environ.get('PYTHONPATH'))"
        env = bare_env({"TXRAY_AGENT": AGENT, "NODE_OPTIONS": "--no-warnings", "PYTHONPATH": "/elsewhere"})
        r = txray_run("--", PYTHON, "-c", show, env=env)
        self.assertEqual(r.stdout.splitlines(), [node + " --no-warnings", f"{shims}/python:/elsewhere"], r.stderr)
        nested = dict(env, NODE_OPTIONS=node + " --no-warnings", PYTHONPATH=f"{shims}/python:/elsewhere")
        r = txray_run("--", PYTHON, "-c", show, env=nested)
        self.assertEqual(r.stdout.splitlines(), [node + " --no-warnings", f"{shims}/python:/elsewhere"], r.stderr)
        r = txray_run("--", PYTHON, "-c", show, env=dict(env, TXRAY_RUNTIME_HINTS="0"))
        self.assertEqual(r.stdout.splitlines(), ["--no-warnings", "/elsewhere"], r.stderr)

    def test_http_server_under_txray_run(self):
        site = os.path.join(self.tmp, "site")
        os.mkdir(site)
        sizes = [0, 1, 1000, 65536, 300000]
        for n in sizes:
            with open(os.path.join(site, f"f{n}.bin"), "wb") as f:
                f.write(os.urandom(n))
        port = free_port()
        with Collector(self.tmp) as c:
            self.spawn([TXRAY, "run", "--collector", c.endpoint, "--app", "web", "--",
                        PYTHON, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", site],
                       env=bare_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)
            received = {}
            for n in sizes:
                out = subprocess.run(["/usr/bin/curl", "-s", "-o", "/dev/null", "-w",
                                      "%{size_header} %{size_download}", f"http://127.0.0.1:{port}/f{n}.bin"],
                                     check=True, capture_output=True, text=True, env=bare_env()).stdout
                h, b = map(int, out.split())
                self.assertEqual(b, n)
                received[f"GET /f{n}.bin"] = h + b
            wait_transactions(c.db, len(sizes))
        txs = [t for t in show_json(c.db, "--last", "100", "--app", "web") if t["name"] in received]
        self.assertEqual(sorted(t["name"] for t in txs), sorted(received))
        for t in txs:
            check_sums(self, t)
            self.assertEqual(t["status"], 200)
            self.assertEqual(t["bytes_written"], received[t["name"]], t["name"])
            self.assertRegex(t["client_addr"], r"^127\.0\.0\.1:\d+$")
        text = show_text(c.db, "--slowest", "1", "--app", "web")
        self.assertRegex(text, r"TRANSACTION +: GET /f\d+\.bin")
        self.assertIn("STATUS         : 200", text)

    def test_curl_in_process_mode_gives_a_readable_profile(self):
        site = os.path.join(self.tmp, "site")
        os.mkdir(site)
        body = os.urandom(12345)
        with open(os.path.join(site, "blob.bin"), "wb") as f:
            f.write(body)
        port = free_port()
        self.spawn([PYTHON, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", site],
                   env=bare_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port)
        out = os.path.join(self.tmp, "got.bin")
        with Collector(self.tmp) as c:
            r = txray_run("--collector", c.endpoint, "--app", "curlrun", "--mode", "process", "--",
                          "/usr/bin/curl", "-s", "-o", out, f"http://127.0.0.1:{port}/blob.bin", env=bare_env())
            self.assertEqual(r.returncode, 0, r.stderr)
            wait_transactions(c.db, 1)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), body)  # the program did its job unchanged

        tx = show_json(c.db, "--last", "1", "--app", "curlrun")[0]
        check_sums(self, tx)
        self.assertEqual(tx["status"], 0)
        sockets = [s for s in tx["steps"] if s["kind"] == "SOCKET" and s.get("attributes", {}).get("port") == str(port)]
        self.assertTrue(sockets, tx["steps"])
        closes = [s for s in tx["steps"] if s["kind"] == "SOCKET_CLOSE" and s.get("id") == sockets[0].get("id")]
        self.assertTrue(closes, tx["steps"])
        self.assertGreater(closes[0]["bytes_read"], len(body))  # headers + body

        text = show_text(c.db, "--last", "1", "--app", "curlrun")
        self.assertIn("APPLICATION    : curlrun", text)
        self.assertRegex(text, rf"SOCKET\[addr=127\.0\.0\.1,port={port},localport=\d+\] uid=[0-9a-f]{{16}}")
        self.assertRegex(text, r"SOCKET_CLOSE R=\d+,W=\d+,uid=")
        self.assertRegex(text, r"(?m)^TOTAL\[[\d,.]+\]\[[\d,.]+\]$")
