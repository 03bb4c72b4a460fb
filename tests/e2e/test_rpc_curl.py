"""Outbound calls made by curl (issue 4), with curl under `txray run --mode process` against a local
python3 http.server: a DNS row for the name asked (the machine's host name: curl answers "localhost"
itself, without the resolver), one HTTP_CALL per transfer with curl's status and
byte counts, the SOCKET row of the transfer nested under its call; `curl -Z` (libcurl's multi
interface) gives one HTTP_CALL per URL, each linked to the transaction it caused in a traced server.
curl's own output is the same with and without the agent.
"""
import os
import socket
import subprocess
import unittest

from txraytest import (PYTHON, TXRAY, Collector, TxrayTestCase, agent_env, bare_env, check_sums, free_port, show_json,
                       wait_port, wait_transactions)

CURL = "/usr/bin/curl"
SIZES = {"a.bin": 1000, "b.bin": 25000, "c.bin": 7}
WRITE_OUT = "%{http_code} %{size_download} %{size_header} %{size_request}\\n"


class CurlTest(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.www = os.path.join(self.tmp, "www")
        os.mkdir(self.www)
        for name, size in SIZES.items():
            with open(os.path.join(self.www, name), "wb") as f:
                f.write(os.urandom(size))
        self.port = free_port()
        self.spawn([PYTHON, "-m", "http.server", "--bind", "0.0.0.0", str(self.port)], cwd=self.www,
                   env=bare_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def run_curl(self, col, args):
        cmd = [TXRAY, "run", "--collector", col.endpoint, "--app", "curl", "--mode", "process", "--", CURL, *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_one_transfer(self):
        host = socket.gethostname()
        socket.getaddrinfo(host, self.port)  # the name must resolve here (it does through /etc/hosts)
        url = f"http://{host}:{self.port}/b.bin?token=secret"
        args = ["-s", "-o", "/dev/null", "-w", WRITE_OUT, url]
        bare = subprocess.run([CURL, *args], capture_output=True, text=True, env=bare_env(), timeout=60).stdout
        with Collector(self.tmp) as col:
            out = self.run_curl(col, args)
            wait_transactions(col.db, 1)
        self.assertEqual(out, bare, "curl prints the same with and without the agent")
        code, size_download, size_header, size_request = map(int, out.split())
        self.assertEqual((code, size_download), (200, SIZES["b.bin"]))

        [tx] = show_json(col.db, "--last", "5")
        check_sums(self, tx)
        steps = tx["steps"]
        calls = [s for s in steps if s["kind"] == "HTTP_CALL"]
        self.assertEqual(len(calls), 1, [s["kind"] for s in steps])
        call = calls[0]
        self.assertEqual(call["status"], 200)
        self.assertEqual(call["url"], f"http://{host}:{self.port}/b.bin?token=?")  # query value masked
        self.assertEqual(call["bytes_read"], size_header + size_download)
        self.assertEqual(call["bytes_written"], size_request)
        self.assertGreater(call["elapsed_ns"], 0)
        self.assertIn("ttfb_us", call.get("attributes", {}))
        self.assertEqual(tx["call_ns"], call["elapsed_ns"])

        dns = [s for s in steps if s["kind"] == "DNS"]
        self.assertTrue(dns, "no DNS row")
        self.assertEqual(dns[0]["host"], host)
        self.assertIn("addr", dns[0]["attributes"])
        self.assertEqual(dns[0]["error"], "")

        sockets = [s for s in steps if s["kind"] == "SOCKET"]
        self.assertTrue(sockets, "no SOCKET row")
        self.assertTrue(any(s["parent"] == call["no"] and s["attributes"].get("port") == str(self.port)
                            for s in sockets), f"no SOCKET row nested under the call: {sockets}")

    def test_parallel_transfers(self):
        """curl -Z (multi interface) against a server under the agent: one row per URL, each linked."""
        names = sorted(SIZES)
        with Collector(self.tmp) as col:
            port = free_port()
            self.spawn([PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port)], cwd=self.www,
                       env=agent_env(col.endpoint, app="web"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)
            args = ["-s", "-Z"]
            for n in names:
                args += ["-o", "/dev/null", f"http://127.0.0.1:{port}/{n}"]
            self.run_curl(col, args)
            wait_transactions(col.db, 1 + len(names))
        txs = show_json(col.db, "--last", "10")
        [tx] = [t for t in txs if t["app"] == "curl"]
        served = {t["txid"]: t for t in txs if t["app"] == "web"}
        check_sums(self, tx)
        calls = [s for s in tx["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(len(calls), len(names), [s["text"] for s in calls])
        by_url = {c["url"]: c for c in calls}
        for n in names:
            c = by_url[f"http://127.0.0.1:{port}/{n}"]
            self.assertEqual(c["status"], 200)
            self.assertGreater(c["bytes_read"], SIZES[n])
            self.assertIn("callee_txid", c, f"{n}: not linked")
            callee = served[c["callee_txid"]]
            self.assertEqual(callee["name"], f"GET /{n}")
            self.assertEqual(callee["parent_span_id"], c["span_id"])
            self.assertEqual(callee["trace_id"], tx["trace_id"])
        self.assertEqual(tx["call_count"], len(names))

if __name__ == "__main__":
    unittest.main()
