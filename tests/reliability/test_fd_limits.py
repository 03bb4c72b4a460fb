"""RLIMIT_NOFILE 16 (issue 12): the agent holds one descriptor, at the top of the table, so the program
keeps nearly all of its own; when there is none to be had, the agent counts what that costs (agents
table: internal_errors, send_failed) and delivers once a descriptor is free again."""
import time

from agenttools import agents
from reltools import Run, get, subject
from txraytest import Collector, TxrayTestCase, show_json, wait_for, wait_transactions


class FdLimits(TxrayTestCase):
    def test_rlimit_16_leaves_the_program_its_sockets(self):
        # Was: 5 of 12 (libzmq's 6-7 descriptors).
        def run(endpoint, mode=None):
            r = Run(self, [subject("nofile16"), "PORT"], endpoint, app="nofile16",
                    extra_env={"TXRAY_FD_TABLE": mode} if mode else None)
            bodies = [get(r.port, p) for p in ("/first", "/after1", "/after2")]
            return r.finish(), bodies

        bare, bare_bodies = run(None)
        self.assertEqual(bare.out, "sockets=12\nserved 3\n")
        for mode, expected in (("private", 12), ("shared", 11)):
            with self.subTest(mode=mode):
                with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/n{mode}.sock", db=f"{self.tmp}/n{mode}.db") as c:
                    traced, traced_bodies = run(c.endpoint, mode)
                    wait_transactions(c.db, 3)
                    names = sorted(t["name"] for t in show_json(c.db, "--last", "10"))
                sockets = int(traced.out.split()[0].split("=")[1])
                print(f"\nRLIMIT_NOFILE 16 ({mode} table): the program opened {sockets} of 12 sockets (bare: 12)")
                self.assertGreaterEqual(sockets, 10)  # the bar
                self.assertEqual(sockets, expected)   # the shared table: the agent's one descriptor at 15
                self.assertEqual(traced.out, f"sockets={sockets}\nserved 3\n")
                self.assertEqual((traced.rc, traced_bodies), (bare.rc, bare_bodies))
                self.assertEqual(names, ["GET /after1", "GET /after2", "GET /first"])

    def test_table_full_when_the_transport_starts(self):
        # Was: no descriptor for the transport, the traces lost silently (no agent row at all).
        def run(endpoint, mode=None):
            r = Run(self, [subject("nofile16"), "PORT", "fill-first"], endpoint, app="full",
                    extra_env={"TXRAY_FD_TABLE": mode} if mode else None)
            bodies = [get(r.port, "/full1"), get(r.port, "/full2")]
            for p in ("/after1", "/after2"):
                time.sleep(0.3)  # past the agent's 100 ms between connection attempts
                bodies.append(get(r.port, p))
            return r.finish(), bodies

        bare, bare_bodies = run(None)
        for mode in ("private", "shared"):
            with self.subTest(mode=mode):
                with Collector(self.tmp, endpoint=f"ipc://{self.tmp}/{mode}.sock", db=f"{self.tmp}/{mode}.db") as c:
                    traced, traced_bodies = run(c.endpoint, mode)

                    def accounted():  # every transaction stored or counted as not sent
                        a = agents(c.db)
                        n = len(show_json(c.db, "--last", "10"))
                        return a and n + a[0]["drops_send_failed"] + a[0]["drops_queue_full"] >= 4
                    wait_for(accounted, what="4 transactions stored or counted")
                    names = sorted(t["name"] for t in show_json(c.db, "--last", "10"))
                    (agent,) = agents(c.db)
                self.assertEqual((traced.rc, traced.out, traced_bodies), (bare.rc, bare.out, bare_bodies))
                print(f"\ntable full when the transport started ({mode} table): stored {len(names)} of 4, "
                      f"send_failed {agent['drops_send_failed']}, internal_errors {agent['internal_errors']}")
                # Every transaction was stored or counted as not sent.
                self.assertEqual(len(names) + agent["drops_send_failed"] + agent["drops_queue_full"], 4)
                self.assertEqual(names[:2], ["GET /after1", "GET /after2"])
                if mode == "private":
                    # The agent's own table is not the program's: nothing is lost.
                    self.assertEqual(len(names), 4)
                else:
                    # No descriptor to be had: counted, and delivered once one was free.
                    self.assertEqual(len(names), 2)
                    self.assertGreaterEqual(agent["internal_errors"], 1)
