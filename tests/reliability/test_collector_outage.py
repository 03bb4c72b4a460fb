"""The collector stopped for D seconds under load: a traced HTTP server (txray-burner, one thread
per keep-alive connection, 200 us of CPU per request) takes steady load from txray-bench-loadgen while the
collector runs, is stopped for D seconds, and is started again on the same endpoint and store.

The load is paced (RATE requests/s, TXRAY_OUTAGE_RATE): back to back it followed the machine's speed
(2,300-7,600 requests/s between runs), and at the top of that range a collector sharing a busy machine
with another test fell behind by more than the agent's 1 s send bound: the agent then drops the
connection (a frame cut short cannot be resumed) and what sat in it is lost in flight, a second outage
the test did not make. Paced well below what the collector stores on a loaded 2-core VM (3,000-4,000/s
seen with two busy loops beside), the outage is the test's own.

Checked, with the figures printed (no timing decides: counts and orders):
- the service never stalls: every request is answered, and it answered requests in every quarter of the
  outage (a service waiting for the collector answers none once its queue is full: a few ms at this load);
- the agent's memory stays bounded: the server's RSS at the start and the end of the outage;
- the transactions lost are counted (agents.drops_*) and stored with their time window (drop_windows):
  each window's count adds up to its counter, it begins after the stop was asked and ends before the load
  did, past the outage's middle, it is closed, and `txray show --drops --json` shows the same (and
  `txray report`'s summary counts them);
- the agent resumes by itself: it stops dropping while the load still runs, and transactions begun after
  its last drop are stored;
- every request answered is accounted for, exactly: stored + dropped + lost in flight = requests
  answered, where "lost in flight" are the transactions of the batches the agent had written into the
  connection when the collector closed it (a PUSH socket has no acknowledgement): the collector finds
  them from the agent's count of what it sent (Batch.sent_transactions) and stores them as a drop window
  of reason lost_in_flight.

Printed, not asserted in `make test` (they move with the neighbours' load: throughput ratios of 0.48-1.95
were measured between the two phases on the loaded VM): the median per-second rate while the collector is
away against the rate while it runs, and the server's CPU time per request in both phases. `make soak`
(scripts/soak.sh) asserts them over its 60 s outage: TXRAY_OUTAGE_MIN_RATIO (throughput away / up, at
least) and TXRAY_OUTAGE_MAX_CPU (CPU per request away / up, at most), unset by default.

TXRAY_OUTAGE_SECONDS (default 10) sets D; `make soak` runs D = 60 (scripts/soak.sh). About 33 s with D = 10."""
import json
import os
import sqlite3
import statistics
import subprocess
import time

from txraytest import BIN, TXRAY, Collector, TxrayTestCase, agent_env, free_port, show_json, wait_for, wait_port

DOWN = float(os.environ.get("TXRAY_OUTAGE_SECONDS", "10"))
MIN_RATIO = os.environ.get("TXRAY_OUTAGE_MIN_RATIO")  # throughput away / up, asserted when set (make soak)
MAX_CPU = os.environ.get("TXRAY_OUTAGE_MAX_CPU")      # CPU per request away / up, asserted when set (make soak)
RATE = float(os.environ.get("TXRAY_OUTAGE_RATE", "1500"))  # requests/s offered, both connections together
UP = 6.0      # collector running, before the outage (the first second is warm-up)
AFTER = 6.0   # after the restart
BURNER = os.path.join(BIN, "txray-burner")
LOADGEN = os.path.join(BIN, "txray-bench-loadgen")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def per_second_rates(timeline, start, end):
    """Requests answered in each whole second of [start, end] (unix seconds), from the loadgen's
    100 ms timeline of (unix_ns, answered so far)."""
    points = [(t / 1e9, n) for t, n in timeline if start <= t / 1e9 <= end]
    rates = []
    i = 0
    for j in range(len(points)):
        if points[j][0] - points[i][0] >= 1.0:
            rates.append((points[j][1] - points[i][1]) / (points[j][0] - points[i][0]))
            i = j
    return rates


def cpu_seconds(pid):
    """utime + stime of every thread of the process (the agent's thread included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def socket_buffer_bytes():
    """What a local stream connection's send buffer holds by default (the agent sets no SO_SNDBUF)."""
    try:
        with open("/proc/sys/net/core/wmem_default") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 212992


def answered_at(timeline, t):
    return max((n for ts, n in timeline if ts / 1e9 <= t), default=0)


def read_timeline(path):
    with open(path) as f:
        return [tuple(int(x) for x in line.split()) for line in f if len(line.split()) == 2]


class CollectorOutage(TxrayTestCase):
    def test_service_keeps_its_pace_memory_bounded_drops_stored_with_window_and_resume(self):
        c = Collector(self.tmp).start()
        port = free_port()
        server = self.spawn([BURNER, "serve", "--listen", f"127.0.0.1:{port}", "--backend", "none",
                             "--burn-us", "200"],
                            stdout=subprocess.DEVNULL, env=agent_env(c.endpoint, app="outage"))
        wait_port(port)
        timeline_file = os.path.join(self.tmp, "timeline")
        total = UP + DOWN + AFTER + 8  # + the collector's stop (0.1 s; 7-10 s under load before it closed its endpoint first)
        load = self.spawn([LOADGEN, "--port", str(port), "--connections", "2", "--seconds", str(total),
                           "--path", "/load", "--rate", str(RATE), "--timeline", timeline_file],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t_load = time.time()
        time.sleep(1)  # warm-up
        t_up, cpu_up = time.time(), cpu_seconds(server.pid)
        time.sleep(UP - 1)

        t_stop_asked, cpu_stop_asked = time.time(), cpu_seconds(server.pid)
        c.stop()  # SIGINT: stores what it received, then closes the endpoint
        t_down, cpu_down = time.time(), cpu_seconds(server.pid)
        rss_start = rss_kib(server.pid)
        rss_peak = rss_start
        while time.time() < t_down + DOWN:
            time.sleep(0.25)
            rss_peak = max(rss_peak, rss_kib(server.pid))
        rss_end = rss_kib(server.pid)
        t_restart, cpu_restart = time.time(), cpu_seconds(server.pid)
        c.start()  # same endpoint, same store
        t_up_again = time.time()

        out, err = load.communicate(timeout=total + 60)
        t_load_end = time.time()
        self.assertEqual(load.returncode, 0, err)
        fields = out.split()
        served, errors = int(fields[1]), int(fields[7])
        self.assertEqual(errors, 0, out)
        server.terminate()  # the exit flush sends what is left
        self.assertEqual(server.wait(timeout=20), 0)

        def stored_http():
            con = sqlite3.connect(f"file:{c.db}?mode=ro", uri=True, timeout=10)
            try:
                return con.execute("SELECT count(*) FROM transactions WHERE kind = 'http'").fetchone()[0]
            finally:
                con.close()
        last = [-1]

        def settled():  # nothing new for a second
            n = stored_http()
            done = n == last[0]
            last[0] = n
            return done
        wait_for(settled, timeout=30, interval=1.0, what="the store to settle")
        c.stop()

        con = sqlite3.connect(f"file:{c.db}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        (agent,) = [dict(r) for r in con.execute("SELECT * FROM agents WHERE pid = ?", (server.pid,))]
        windows = [dict(r) for r in con.execute("SELECT * FROM drop_windows WHERE agent_id = ? ORDER BY seq",
                                                (agent["id"],))]
        stored = con.execute("SELECT count(*) FROM transactions WHERE agent_id = ? AND kind = 'http'",
                             (agent["id"],)).fetchone()[0]
        # Load shedding (docs/fleet.md): when the store falls behind (a loaded machine), the collector only
        # counts the fast successful transactions it sheds, in shed_counts (by app: this agent's is alone).
        shed = con.execute("SELECT coalesce(sum(count), 0) FROM shed_counts WHERE app = 'outage' AND kind = 'http'"
                           " AND origin = 'collector'").fetchone()[0]
        first_after = con.execute("SELECT min(start_unix_ns) FROM transactions WHERE agent_id = ? AND kind = 'http'"
                                  " AND start_unix_ns > ?", (agent["id"], int(t_restart * 1e9))).fetchone()[0]
        # Resumed: from the agent's last drop on (the end of its send_failed window; its reconnection
        # took 0.1-0.6 s after the collector's socket was back on the loaded VM, checked above and below).
        t_resumed = max([w["last_unix_ns"] / 1e9 for w in windows if w["reason"] == "send_failed"] + [t_up_again])
        stored_after = con.execute("SELECT count(*) FROM transactions WHERE agent_id = ? AND kind = 'http'"
                                   " AND start_unix_ns > ?", (agent["id"], int(t_resumed * 1e9))).fetchone()[0]
        con.close()

        # Throughput: median per-second rate, collector up (after a second of warm-up) vs away.
        timeline = read_timeline(timeline_file)
        up_rates = per_second_rates(timeline, t_up, t_stop_asked)
        down_rates = per_second_rates(timeline, t_down, t_restart)
        up_rate = statistics.median(up_rates) if up_rates else 0.0
        down_rate = statistics.median(down_rates) if down_rates else 0.0
        ratio = down_rate / up_rate if up_rate else 0.0
        # Requests answered in each quarter of the outage.
        quarters = [t_down + i * (t_restart - t_down) / 4 for i in range(5)]
        per_quarter = [answered_at(timeline, b) - answered_at(timeline, a) for a, b in zip(quarters, quarters[1:])]
        # The server's CPU time per request (all its threads, the agent's included) in the two phases:
        # steadier than throughput on a shared machine, and what the agent would add by working harder
        # while the collector is away.
        cpu_up_us = 1e6 * (cpu_stop_asked - cpu_up) / max(1, answered_at(timeline, t_stop_asked) - answered_at(timeline, t_up))
        cpu_down_us = 1e6 * (cpu_restart - cpu_down) / max(1, answered_at(timeline, t_restart) - answered_at(timeline, t_down))

        dropped = agent["drops_queue_full"] + agent["drops_send_failed"] + agent["drops_encode_failed"]
        in_flight = sum(w["count"] for w in windows if w["reason"] == "lost_in_flight")
        print(f"\ncollector away {t_restart - t_down:.1f} s (its stop took {t_down - t_stop_asked:.1f} s): "
              f"throughput up {up_rate:.0f}/s, away {down_rate:.0f}/s, ratio {ratio:.2f}; "
              f"server CPU per request up {cpu_up_us:.0f} us, away {cpu_down_us:.0f} us "
              f"({cpu_down_us / max(1, cpu_up_us):.2f}x; both not asserted but in make soak); "
              f"answered per quarter of the outage {per_quarter}; "
              f"server RSS {rss_start} -> {rss_end} KiB at the outage's start and end "
              f"(growth {rss_end - rss_start:+d} KiB, peak {rss_peak} KiB); "
              f"requests {served}: stored {stored}, shed by the collector {shed}, dropped {dropped} "
              f"(send_failed {agent['drops_send_failed']}, queue_full {agent['drops_queue_full']}), "
              f"lost in flight {in_flight} (bound {2 * socket_buffer_bytes() // 100}), unaccounted {served - stored - shed - dropped - in_flight}; windows: " +
              "; ".join(f"{w['reason']} {w['count']} from +{w['first_unix_ns'] / 1e9 - t_down:.2f} s "
                        f"to +{w['last_unix_ns'] / 1e9 - t_down:.2f} s" for w in windows) +
              f"; first stored after the restart at +{(first_after or 0) / 1e9 - t_restart:.2f} s "
              f"(+{(first_after or 0) / 1e9 - t_up_again:.2f} s after its socket was back); "
              f"stored after the last drop {stored_after} of {served - answered_at(timeline, t_resumed)} answered")

        # Never stalls: a host that waited for the collector would stop answering once its queue was full
        # (at this load, within milliseconds of the stop) until the collector came back. The throughput
        # and CPU comparisons are make soak's (above): on this shared 2-vCPU VM the neighbours' load moves
        # the rate by ±50% between phases (measured ratios 0.48-1.95 with load averages of 7-16; a bare
        # copy of the server run alongside as a control swung as much).
        self.assertTrue(all(n > 0 for n in per_quarter), f"answered per quarter of the outage: {per_quarter}")
        if MIN_RATIO is not None:
            self.assertGreaterEqual(len(up_rates), 3)
            self.assertGreaterEqual(len(down_rates), 3)
            self.assertGreaterEqual(ratio, float(MIN_RATIO))
        if MAX_CPU is not None:
            self.assertLessEqual(cpu_down_us, float(MAX_CPU) * cpu_up_us)
        # Bounded memory: the agent drops what it cannot send; a few MiB of slack for the host's own
        # allocator and the page cache of its libraries.
        self.assertLess(rss_end - rss_start, 8 * 1024)
        # Drops counted, and stored with their window.
        self.assertGreater(agent["drops_send_failed"], 0)
        self.assertTrue(windows, "no drop window stored")
        for reason in ("queue_full", "send_failed", "encode_failed"):  # the agent's own windows
            self.assertEqual(sum(w["count"] for w in windows if w["reason"] == reason), agent["drops_" + reason],
                             reason)
        for w in windows:
            self.assertTrue(w["closed"], w)
            self.assertLessEqual(w["first_unix_ns"], w["last_unix_ns"])
            if w["reason"] == "lost_in_flight":
                # Sent before the stop, never read by the collector: it begins with the last batch the
                # collector read before it went (5 ms before the stop was asked, under load; as far back
                # as its receiving lagged on a loaded machine), so only after the load began.
                self.assertGreaterEqual(w["first_unix_ns"], int(t_load * 1e9), w)
            else:
                # The agent's own windows: from the stop (the collector unbinds its endpoint first) to
                # before the load ended (it stopped dropping by itself: resumed).
                self.assertGreaterEqual(w["first_unix_ns"], int(t_stop_asked * 1e9), w)
                self.assertLess(w["last_unix_ns"], int(t_load_end * 1e9), w)
        send_failed = [w for w in windows if w["reason"] == "send_failed"]
        # The window spans the outage (not just a blip at its start): the load ran on all through it, and
        # every batch the agent tried to send while the collector was away was a drop.
        self.assertGreater(max(w["last_unix_ns"] for w in send_failed) / 1e9, (t_down + t_restart) / 2)
        report = json.loads(subprocess.run([TXRAY, "report", "--db", c.db, "--format", "json"], check=True,
                                           capture_output=True, text=True).stdout)
        self.assertEqual(report["summary"]["dropped_transactions"], dropped + in_flight)
        shown = show_json(c.db, "--drops")
        self.assertEqual(sorted((j["seq"], j["reason"], j["count"]) for j in shown if j["pid"] == server.pid),
                         sorted((w["seq"], w["reason"], w["count"]) for w in windows))
        # Resumes by itself: it stopped dropping while the load still ran (above), and what was begun
        # after its last drop is stored. Everything answered after that drop is stored, shed or lost in
        # flight by the exact accounting below (a drop would be in a window, after the last one). How soon
        # it resumed is printed (the agent tries every 100 ms; 0.03-0.6 s after the collector's socket was
        # back on the loaded VM), not asserted: a loaded machine stretches the collector's own start.
        self.assertIsNotNone(first_after, "nothing stored after the restart")
        self.assertGreater(stored_after, 0, "nothing stored after the agent's last drop")
        # Accounting, exact: every request answered was stored, dropped by the agent (counted), or lost in
        # flight (found by the collector from the agent's count of what it sent). In flight is what sat in
        # the connection when the collector closed it: while the collector drains for seconds at its stop,
        # the agent fills the socket's kernel buffer (net.core.wmem_default bytes; a send that waits
        # longer is dropped and counted) and libzmq's few queued messages. So it is bounded by bytes, not
        # by the requests served: 275-926 transactions of ~230 bytes here, at most twice the buffer at
        # 100 bytes each (4,259 with the default 212,992 bytes). A collector that lost its queue (512
        # batches) or a connection's worth per reconnection would be far past it.
        self.assertEqual(stored + shed + dropped + in_flight, served)
        # Lost in flight: what the socket buffers held when the collector went. A collector whose stop is
        # slow (draining its queue on a loaded machine: 8.7 s seen) also loses what its ZeroMQ receive queue
        # held by then; that is still counted exactly (above), and bounded by a tenth of the requests.
        bound = 2 * socket_buffer_bytes() // 100 if t_down - t_stop_asked < 3.0 else served // 10
        self.assertLessEqual(in_flight, bound)
