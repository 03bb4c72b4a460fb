"""Programs that treat the descriptor table as theirs alone (issue 12): each runs bare and under the agent,
must behave identically (same responses, which carry the descriptor numbers it saw, same output and exit
status), and under the agent its requests after the hostile act are stored. Under the agent each runs
twice: with the agent's connection in a private descriptor table (the default) and in the program's own
table (TXRAY_FD_TABLE=shared: what happens where unshare() is refused)."""
import os

from reltools import SUBJECTS, Run, get, subject
from txraytest import PYTHON, Collector, TxrayTestCase, check_sums, show_json, wait_for, wait_transactions

MODES = ("private", "shared")


class FdHostile(TxrayTestCase):
    def collector(self, tag):
        return Collector(self.tmp, endpoint=f"ipc://{self.tmp}/{tag}.sock", db=f"{self.tmp}/{tag}.db")

    def stored_names(self, c, n):
        wait_transactions(c.db, n)
        txs = show_json(c.db, "--last", "100")
        for t in txs:
            check_sums(self, t)
        return sorted(t["name"] for t in txs)

    def compare(self, argv, paths, check_bare, app, shared_view=lambda body: body):
        """Runs argv bare, then under the agent in each mode; the traced runs must match the bare one and
        store a transaction per path. shared_view: what of each body must match in the shared mode."""
        def run(endpoint, mode=None):
            r = Run(self, argv, endpoint, app=app, extra_env={"TXRAY_FD_TABLE": mode} if mode else None)
            bodies = [get(r.port, p) for p in paths]
            return r.finish(), bodies

        bare, bare_bodies = run(None)
        check_bare(bare, bare_bodies)
        for mode in MODES:
            with self.subTest(mode=mode):
                with self.collector(f"{app}-{mode}") as c:
                    traced, traced_bodies = run(c.endpoint, mode)
                    names = self.stored_names(c, len(paths))
                self.assertEqual((traced.rc, traced.out, traced.err), (bare.rc, bare.out, bare.err))
                view = shared_view if mode == "shared" else (lambda body: body)
                # Same descriptor numbers seen by the program.
                self.assertEqual([view(b) for b in traced_bodies], [view(b) for b in bare_bodies])
                self.assertEqual(names, sorted(f"GET {p}" for p in paths))

    def test_dup2_devnull_over_every_descriptor_it_did_not_open(self):
        # Was: killed by an abort inside libzmq (signaler.cpp:348) once its eventfds became /dev/null.
        def check_bare(bare, bodies):
            self.assertEqual((bare.rc, bare.out), (0, "served 5\n"), bare.err)
        # In the shared table a connection attempt holds the lowest free number for a few microseconds
        # (then moves to the top): an accept() or open() in that instant gets the next number.
        self.compare([PYTHON, os.path.join(SUBJECTS, "dup2_server.py"), "PORT", 2, 3],
                     [f"/r{i}" for i in range(5)], check_bare, "dup2",
                     shared_view=lambda body: body.split(b" ")[0])

    def test_daemon_with_0_1_2_closed_keeps_logging_there(self):
        # Was: abort (mailbox.cpp:99): the transport took 1 and 2, and the log lines landed in its eventfds.
        def check_bare(bare, bodies):
            self.assertEqual(bare.rc, 0)
            self.assertIn(b"conn=1 log=0:EPIPE,1:EBADF,2:EBADF", bodies[-1])
        # In the shared table, the connection is made at the lowest free number (1 here) and moved to the
        # top microseconds later (longer when the agent thread is preempted there): a connection accepted
        # in that instant gets 2, a log line written then fails with ENOTCONN instead of EBADF. The
        # private table (the default) has no such instant.
        self.compare([subject("low_fds_daemon"), "PORT", 4], [f"/r{i}" for i in range(4)], check_bare, "lowfds",
                     shared_view=lambda body: body.split(b" listen=")[0])

    def test_next_open_is_the_lowest_number_after_every_kind_of_sweep(self):
        # Was: 6 descriptors left open, next open() 9. closefrom() has no exception: the subject moves its
        # listening socket to 3 first, so 4 is the lowest free number there.
        for how, lowest in (("close_range", 3), ("closefrom", 4), ("proc_walk", 3)):
            with self.subTest(how=how):
                def check_bare(bare, bodies):
                    self.assertEqual(bare.out, f"next_open={lowest}\nserved 2\n")
                self.compare([subject("fd_sweeper"), "PORT", how], ["/before", "/after"], check_bare, how)

    def test_double_fork_daemon_that_closes_everything_from_0(self):
        def run(endpoint, mode=None):
            report = os.path.join(self.tmp, f"report-{mode}")
            r = Run(self, [subject("double_fork_daemon"), "PORT", 3, report], endpoint, app="daemon",
                    extra_env={"TXRAY_FD_TABLE": mode} if mode else None)
            bodies = [get(r.port, f"/d{i}") for i in range(3)]
            r.finish()
            wait_for(lambda: os.path.exists(report) and open(report).read().endswith("\n"), what="daemon report")
            return r, bodies, open(report).read()

        bare, bare_bodies, bare_report = run(None)
        self.assertEqual(bare.rc, 0)
        self.assertEqual(bare_bodies[0], b"request 0 null=0 listen=3 conn=4\n")
        for mode in MODES:
            with self.subTest(mode=mode):
                with self.collector(f"daemon-{mode}") as c:
                    traced, traced_bodies, traced_report = run(c.endpoint, mode)
                    names = self.stored_names(c, 3)
                self.assertEqual(traced.rc, bare.rc)
                # In the shared table the agent's connection holds the lowest free number for a few
                # microseconds (as in the tests above); a forked daemon's agent thread starts when the
                # daemon goes back to accept() with its first requests held (transport.h: before_wait), so a
                # connection accepted in that instant can get the next number. The private table has no
                # such instant: there the numbers match exactly.
                view = (lambda b: b.split(b" conn=")[0]) if mode == "shared" else (lambda b: b)
                self.assertEqual(([view(b) for b in traced_bodies], traced_report),
                                 ([view(b) for b in bare_bodies], bare_report))
                self.assertEqual(names, [f"GET /d{i}" for i in range(3)])
