"""Nobody gets in who shouldn't (docs/security.md): `txray collect` with no arguments listens on loopback and
works with `txray run` with no --collector; a non-loopback bind without keys is refused; CURVE-authenticated
agents are stored, unauthenticated and unknown ones refused and counted; keys and stores are private;
over-long fields are truncated, and a message built to decode into gigabytes is refused unparsed."""
import os
import re
import socket
import sqlite3
import stat
import subprocess
import time
import unittest

from txraytest import (AGENT, PYTHON, SENDER, TXRAY, Collector, TxrayTestCase, bare_env, count_transactions,
                       free_port, send_batches, show_json, wait_for, wait_port, wait_transactions)


def own_ip():
    """An address of this machine that is not loopback (None when it has none)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            ip = s.getsockname()[0]
        return None if ip.startswith("127.") else ip
    except OSError:
        return None


def status_numbers(text):
    """Counters of the last status line in a collector log."""
    lines = [l for l in text.splitlines() if "stored in total" in l]
    if not lines:
        return {"refused peers": 0, "unlisted keys": 0, "stored": 0}
    line = lines[-1]
    nums = {k: int(v) for k, v in re.findall(
        r"(malformed|invalid|oversize|lost|truncated fields|refused peers|unlisted keys) (\d+)", line)}
    nums["stored"] = int(re.search(r"(\d+) stored in total", line).group(1))
    return nums


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def keygen(outdir):
    r = subprocess.run([TXRAY, "keygen", "-o", outdir], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return {n: os.path.join(outdir, n) for n in ("server.key", "server.pub", "client.key", "client.pub")}


def process_run(endpoint, extra_env=None, app="secure"):
    """One short program under the agent in process mode: one transaction when it gets through."""
    env = bare_env(extra_env or {})
    env.pop("TXRAY_COLLECTOR", None)
    return subprocess.run([TXRAY, "run", "--collector", endpoint, "--app", app, "--mode", "process", "--",
                           PYTHON, "-c", "import time; time.sleep(0.3)"], env=env, capture_output=True, text=True,
                          timeout=60)


class Defaults(TxrayTestCase):
    @unittest.skipUnless(os.path.exists(AGENT), "the agent library is not built")
    def test_collect_and_run_with_no_arguments(self):
        def port_free():
            try:
                with socket.create_connection(("127.0.0.1", 7878), timeout=0.5):
                    return False
            except OSError:
                return True
        try:
            wait_for(port_free, timeout=15, interval=0.5, what="127.0.0.1:7878 to be free")
        except AssertionError:
            self.skipTest("something else listens on 127.0.0.1:7878")
        log = open(os.path.join(self.tmp, "collector.log"), "wb")
        c = self.spawn([TXRAY, "collect", "--status-interval", "1"], cwd=self.tmp, stdout=log, stderr=subprocess.STDOUT)
        wait_port(7878)
        db = os.path.join(self.tmp, "txray.db")
        self.assertTrue(os.path.exists(db))
        port = free_port()
        env = bare_env()
        env.pop("TXRAY_COLLECTOR", None)
        self.spawn([TXRAY, "run", "--app", "defaults", "--", PYTHON, "-m", "http.server", str(port), "--bind",
                    "127.0.0.1", "--directory", self.tmp], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
        wait_port(port)
        subprocess.run(["/usr/bin/curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/"], check=True,
                       env=bare_env())
        wait_transactions(db, 1)
        # (--app: any other agent on this machine with the default collector may send here too.)
        txs = show_json(db, "--last", "5", "--app", "defaults")
        self.assertEqual([(t["app"], t["name"]) for t in txs], [("defaults", "GET /")])
        # The store and its WAL files: the owner's only.
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                self.assertEqual(mode_of(db + suffix), 0o600, suffix)
        c.send_signal(2)
        self.assertEqual(c.wait(timeout=20), 0)
        log.close()
        with open(os.path.join(self.tmp, "collector.log")) as f:
            self.assertIn("listening on tcp://127.0.0.1:7878, storing into txray.db", f.read())

    def test_store_is_private_whatever_the_umask(self):
        old = os.umask(0)
        try:
            with Collector(self.tmp) as c:
                send_batches(c.endpoint, "--transactions", 10)
                wait_transactions(c.db, 10)
                modes = {s: mode_of(c.db + s) for s in ("", "-wal", "-shm") if os.path.exists(c.db + s)}
        finally:
            os.umask(old)
        self.assertEqual(modes[""], 0o600)
        self.assertEqual(set(modes.values()), {0o600}, modes)


class NonLoopback(TxrayTestCase):
    def collect(self, *args):
        return subprocess.run([TXRAY, "collect", "--db", os.path.join(self.tmp, "x.db"), *args],
                              capture_output=True, text=True, timeout=30)

    def test_refused_without_keys(self):
        port = free_port()
        endpoints = [f"tcp://0.0.0.0:{port}", f"tcp://*:{port}"]
        if own_ip():
            endpoints.append(f"tcp://{own_ip()}:{port}")
        for ep in endpoints:
            r = self.collect("--listen", ep)
            self.assertEqual(r.returncode, 2, ep)
            self.assertIn(f"refusing to listen on {ep} without authentication", r.stderr)
            self.assertIn("txray keygen", r.stderr)
            self.assertIn("--insecure", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.db")), "a refused start creates no store")

    def test_insecure_is_explicit(self):
        c = Collector(self.tmp, endpoint=f"tcp://0.0.0.0:{free_port()}", extra_args=["--insecure"]).start()
        time.sleep(0.3)
        self.assertTrue(c.running(), c.log_text())
        self.assertEqual(c.stop(), 0)

    def test_bad_key_arguments_exit_2(self):
        keys = keygen(os.path.join(self.tmp, "k"))
        ep = f"tcp://0.0.0.0:{free_port()}"
        r = self.collect("--listen", ep, "--curve-secret-key", keys["server.key"])  # no allowed clients
        self.assertEqual(r.returncode, 2)
        bad = os.path.join(self.tmp, "bad.key")
        with open(bad, "w") as f:
            f.write("not a key\n")
        r = self.collect("--listen", ep, "--curve-secret-key", bad, "--allowed-clients", keys["client.pub"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a CURVE key", r.stderr)
        empty = os.path.join(self.tmp, "empty.pub")
        open(empty, "w").close()
        r = self.collect("--listen", ep, "--curve-secret-key", keys["server.key"], "--allowed-clients", empty)
        self.assertEqual(r.returncode, 2)
        self.assertIn("lists no client key", r.stderr)


class Keygen(TxrayTestCase):
    def test_files_are_private_and_never_overwritten(self):
        d = os.path.join(self.tmp, "keys")
        keys = keygen(d)
        for path in keys.values():
            self.assertEqual(mode_of(path), 0o600, path)
            with open(path) as f:
                lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
            self.assertEqual(len(lines), 1)
            self.assertEqual(len(lines[0]), 40)
        with open(keys["client.pub"]) as f:
            before = f.read()
        r = subprocess.run([TXRAY, "keygen", "-o", d], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--force", r.stderr)
        with open(keys["client.pub"]) as f:
            self.assertEqual(f.read(), before)
        r = subprocess.run([TXRAY, "keygen", "-o", d, "--force"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        with open(keys["client.pub"]) as f:
            self.assertNotEqual(f.read(), before)


@unittest.skipUnless(os.path.exists(AGENT), "the agent library is not built")
class Curve(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.keys = keygen(os.path.join(self.tmp, "keys"))
        self.other = keygen(os.path.join(self.tmp, "other"))  # a key pair the collector does not list
        port = free_port()
        self.connect_to = f"tcp://{own_ip() or '127.0.0.1'}:{port}"
        self.collector = Collector(self.tmp, endpoint=f"tcp://0.0.0.0:{port}",
                                   extra_args=["--curve-secret-key", self.keys["server.key"],
                                               "--allowed-clients", self.keys["client.pub"]]).start()
        wait_port(port)

    def tearDown(self):
        self.collector.stop()
        super().tearDown()

    def test_authenticated_agent_is_stored_others_refused_and_counted(self):
        c = self.collector
        # Key files by path (this test's paths are 40 characters long, like a z85 key: the file wins).
        good = {"TXRAY_SERVER_KEY": self.keys["server.pub"], "TXRAY_CLIENT_SECRET_KEY": self.keys["client.key"]}
        r = process_run(self.connect_to, good, app="good")
        self.assertEqual(r.returncode, 0)
        wait_transactions(c.db, 1)
        # Keys given as z85 text rather than files, the public key too.
        def key(path):
            with open(path) as f:
                return [l.strip() for l in f if l.strip() and not l.startswith("#")][0]
        inline = {"TXRAY_SERVER_KEY": key(self.keys["server.pub"]),
                  "TXRAY_CLIENT_SECRET_KEY": key(self.keys["client.key"]),
                  "TXRAY_CLIENT_PUBLIC_KEY": key(self.keys["client.pub"])}
        self.assertEqual(process_run(self.connect_to, inline, app="good").returncode, 0)
        wait_transactions(c.db, 2)

        t0 = time.monotonic()
        self.assertEqual(process_run(self.connect_to, {}, app="nokeys").returncode, 0)
        elapsed_nokeys = time.monotonic() - t0
        unlisted = {"TXRAY_SERVER_KEY": self.keys["server.pub"], "TXRAY_CLIENT_SECRET_KEY": self.other["client.key"]}
        self.assertEqual(process_run(self.connect_to, unlisted, app="unlisted").returncode, 0)
        wrong_server = {"TXRAY_SERVER_KEY": self.other["server.pub"], "TXRAY_CLIENT_SECRET_KEY": self.keys["client.key"]}
        self.assertEqual(process_run(self.connect_to, wrong_server, app="wrongserver").returncode, 0)
        # A key variable that names no key: the agent sends nothing rather than clear text.
        self.assertEqual(process_run(self.connect_to, {"TXRAY_SERVER_KEY": "/nonexistent"}, app="badvar").returncode, 0)
        wait_for(lambda: status_numbers(c.log_text())["unlisted keys"] >= 1, timeout=10, what="a counted unlisted key")
        wait_for(lambda: status_numbers(c.log_text())["refused peers"] >= 3, timeout=10, what="refused peers counted")
        self.assertEqual(c.stop(), 0)
        st = status_numbers(c.log_text())
        apps = sorted(t["app"] for t in show_json(c.db, "--last", "100"))
        self.assertEqual(apps, ["good", "good"])
        self.assertEqual(st["stored"], 2)
        self.assertIn("refused a CURVE client", c.log_text())
        print(f"\nCURVE: 2 authenticated agents stored; refused peers {st['refused peers']} "
              f"(unlisted keys {st['unlisted keys']}); an agent without keys exited in {elapsed_nokeys:.2f} s")

    def test_plain_zeromq_sender_is_refused(self):
        # txray-test-sender speaks ZeroMQ without CURVE: nothing stored, the peer counted.
        p = self.spawn([SENDER, "--endpoint", self.connect_to, "--transactions", "10"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: status_numbers(self.collector.log_text())["refused peers"] >= 1, timeout=10,
                 what="the sender to be refused")
        p.kill()
        self.assertEqual(count_transactions(self.collector.db), 0)


class HostileAgent(TxrayTestCase):
    def test_long_fields_truncated_not_rejected(self):
        with Collector(self.tmp) as c:
            send_batches(c.endpoint, "--transactions", 20, "--per-batch", 10, "--long-text-bytes", 3000000,
                         "--oversize", 1, "--oversize-bytes", 2000000)
            wait_transactions(c.db, 20)
        st = status_numbers(c.log_text())
        self.assertEqual(st["invalid"], 0)
        self.assertEqual(st["oversize"], 0)
        self.assertEqual(st["truncated fields"], 21)  # 20 step texts, 1 command line
        with sqlite3.connect(c.db) as con:
            texts = [r[0] for r in con.execute("SELECT text FROM texts WHERE length(text) > 100000")]
            cmd = con.execute("SELECT max(length(command_line)) FROM agents").fetchone()[0]
        self.assertEqual(len(texts), 1)  # 20 identical truncated texts, stored once
        self.assertLessEqual(len(texts[0].encode()), 1 << 20)
        self.assertTrue(texts[0].endswith("\u2026[truncated from 3000000 bytes]"), texts[0][-60:])
        self.assertLessEqual(cmd, 1 << 20)

    def test_messages_that_decode_to_gigabytes_are_refused_unparsed(self):
        with Collector(self.tmp) as c:
            pid = c.proc.pid
            # Three 60 MB messages of 20 million empty steps each: ~3 GB each once parsed.
            send_batches(c.endpoint, "--hostile", 3, "--transactions", 10)
            wait_transactions(c.db, 10)
            with open(f"/proc/{pid}/status") as f:
                hwm_kb = int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1))
        st = status_numbers(c.log_text())
        self.assertEqual(st["oversize"], 3)
        self.assertIn("would decode to about", c.log_text())
        # Each message is held once by libzmq and once by the receiver: a few hundred MB at most.
        self.assertLess(hwm_kb, 600 * 1024, f"collector peak RSS {hwm_kb} kB")
        print(f"\nhostile: 3 messages of 60 MB (each ~3 GB decoded) refused; collector peak RSS {hwm_kb // 1024} MB")


if __name__ == "__main__":
    unittest.main()
