"""Processes that fork and spawn (issue 12). fork x N with transactions open on both sides
(subjects/fork_tree.c): identical output; every child's transactions (the request it served, its own
transaction, a grandchild's) stored; the parent's one transaction intact, with a call to each child, each
linked to the child's request. fork + exec, vfork + exec, vfork + _exit, posix_spawn, popen, system
(subjects/spawner.c): the same output and exit statuses as bare; the agent in each new image traces it;
a vfork child closing its copy of a descriptor leaves the parent's tracing of it alone.

Found here: 4 of 200 children's transactions lost with the collector up on the loaded VM — the exit
send gave the collector's handshake 20 ms in all; now 20 ms to connect, then 250 ms for the handshake
(agent/transport/transport.cpp: kExitHandshakeNs). At load 10-15 one child in ~400 still did not deliver
within the agent's 1 s exit bound (no connection failure: its exit came first); such whole losses are
allowed for at most 1% of the processes (see the test)."""
import http.server
import os
import subprocess
import threading

from reltools import subject
from txraytest import (Collector, TxrayTestCase, agent_env, bare_env, count_transactions, show_json, wait_for,
                       wait_transactions)

# Children forked by the parent: 200 in `make test` (about 10-20 s on the loaded VM), 1,000 in `make soak`.
CHILDREN = int(os.environ.get("TXRAY_REL_FORKS", "200"))


class Backend:
    """A plain HTTP/1.0 server in this process answering GET PATH with "ok PATH"."""

    def __enter__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = ("ok " + self.path).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class Forks(TxrayTestCase):
    def test_fork_with_transactions_open_in_parent_and_children(self):
        argv = [subject("fork_tree"), str(CHILDREN)]
        expected = f"children {CHILDREN} ok {CHILDREN}\n"
        bare = subprocess.run(argv, env=bare_env(), capture_output=True, text=True, timeout=600)
        self.assertEqual((bare.returncode, bare.stdout), (0, expected), bare.stderr)
        grandchildren = (CHILDREN + 4) // 5
        with Collector(self.tmp) as c:
            # TXRAY_MAX_STEPS: every one of the parent's calls a row of its own (3 rows per call).
            traced = subprocess.run(argv, env=agent_env(c.endpoint, app="forktree",
                                                        extra={"TXRAY_MAX_STEPS": str(3 * CHILDREN + 10)}),
                                    capture_output=True, text=True, timeout=600)
            self.assertEqual((traced.returncode, traced.stdout), (bare.returncode, bare.stdout), traced.stderr)
            total = 1 + 2 * CHILDREN + grandchildren
            # Every process has exited: what was sent is in the collector's hands. Wait for all of it, or
            # for nothing new in 3 s.
            last = [-1]

            def settled():
                n = count_transactions(c.db)
                done = n >= total or n == last[0]
                last[0] = n
                return done
            wait_for(settled, timeout=60, interval=3.0, what="the store to settle")
            txs = show_json(c.db, "--last", str(2 * total))
        names = sorted(t["name"] for t in txs)
        want = sorted(["parent"] + [f"GET /child/{i}" for i in range(CHILDREN)] +
                      [f"child {i}" for i in range(CHILDREN)] +
                      [f"grandchild {i}" for i in range(0, CHILDREN, 5)])
        self.assertEqual(len(names), len(set(names)), "a transaction stored twice")
        # A child's transactions leave with its exit, within the agent's exit bound (1 s, then the process
        # goes: PITFALLS 11). On a 2-core VM at load 10-15 one child in ~400 did not deliver in that time
        # (its request and its own transaction missing together, its agent never registered; seen 3 times
        # in 10 runs of this test, never on a quieter machine). That loss is the bound doing its job and
        # cannot be counted anywhere (the process is gone), so it is allowed for at most 1% of the
        # processes, and only whole: a fork that mixed up state (the parent's transaction in a child, a
        # child's rows in another's) shows as wrong or partial names, pids and links, which stay exact.
        missing = sorted(set(want) - set(names))
        self.assertFalse(set(names) - set(want), names)
        lost = {int(n.split()[-1].split("/")[-1]) for n in missing if not n.startswith("grandchild")}
        for i in lost:
            self.assertIn(f"GET /child/{i}", missing, f"child {i} delivered only part of its transactions")
            self.assertIn(f"child {i}", missing, f"child {i} delivered only part of its transactions")
        lost_processes = len(lost) + sum(1 for n in missing if n.startswith("grandchild"))
        self.assertNotIn("parent", missing)
        self.assertLessEqual(lost_processes, max(1, CHILDREN // 100), f"lost at exit: {missing}")
        (parent,) = [t for t in txs if t["name"] == "parent"]
        served = {t["txid"]: t for t in txs if t["name"].startswith("GET /child/")}
        # The parent's transaction: its two steps, a call per child, each linked to that child's request.
        messages = [s["text"] for s in parent["steps"] if s["kind"] == "MESSAGE"]
        self.assertEqual(messages, ["before the forks", "after the forks"])
        calls = [s for s in parent["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(parent["call_count"], CHILDREN)
        self.assertEqual(len(calls), CHILDREN)
        linked = [s["callee_txid"] for s in calls if s.get("callee_txid")]
        self.assertEqual(len(linked), CHILDREN - len(lost))  # a lost child's request has nothing to link to
        self.assertEqual(set(linked), set(served))
        for s in calls:
            self.assertEqual(s["status"], 200)
        # Each child's transactions come from that child's own process, never from the parent's.
        pids = {t["pid"] for t in txs if t["name"] != "parent"}
        self.assertNotIn(parent["pid"], pids)
        self.assertEqual(len({t["pid"] for t in txs if t["name"].startswith("child ")}), CHILDREN - len(lost))
        for t in txs:
            self.assertEqual(t["error"], "", t["name"])
        if missing:
            print(f"\nlost at exit (the agent's exit bound, under load): {missing}")
        stored_gc = sum(1 for n in names if n.startswith("grandchild"))
        print(f"\nfork x {CHILDREN} inside the parent's transaction: {len(served)}/{CHILDREN} requests, "
              f"{CHILDREN - len(lost)}/{CHILDREN} child and {stored_gc}/{grandchildren} grandchild transactions "
              f"stored; the parent's: {len(calls)} calls, {len(linked)} linked to its child's request")

    def test_exec_vfork_posix_spawn_popen_system(self):
        with Backend() as b:
            argv = [subject("spawner"), str(b.port)]
            bare = subprocess.run(argv, env=bare_env(), capture_output=True, text=True, timeout=60)
            self.assertEqual(bare.returncode, 0, bare.stderr)
            self.assertIn("vfork-exit exit 7\n", bare.stdout)
            self.assertIn("parent calls 5 ok 5\n", bare.stdout)
            with Collector(self.tmp) as c:
                traced = subprocess.run(argv, env=agent_env(c.endpoint, app="spawner"), capture_output=True,
                                        text=True, timeout=60)
                self.assertEqual((traced.returncode, traced.stdout), (bare.returncode, bare.stdout), traced.stderr)
                wait_transactions(c.db, 6)
                txs = show_json(c.db, "--last", "20")
        by_name = {t["name"]: t for t in txs}
        modes = ["fork-exec", "vfork-exec", "posix_spawn", "popen", "system"]
        self.assertEqual(sorted(by_name), sorted(["parent"] + [f"child {m}" for m in modes]))
        parent = by_name["parent"]
        calls = [s["text"] for s in parent["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual([c[len("http://x"):] for c in calls],
                         ["/parent/before", "/parent/after-vfork-exec", "/parent/after-vfork-exit",
                          "/parent/after-posix_spawn", "/parent/after"], calls)
        for m in modes:
            t = by_name[f"child {m}"]
            self.assertNotEqual(t["pid"], parent["pid"])
            self.assertEqual((t["call_count"], t["error"]), (1, ""), m)
        print(f"\nfork+exec, vfork+exec, vfork+_exit, posix_spawn, popen, system: output and exit statuses as bare; "
              f"5/5 children traced in their new image, the parent's 5 calls intact")
