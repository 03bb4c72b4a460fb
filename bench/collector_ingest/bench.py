"""Collector ingest benchmark: 10-step transactions sent by txray-test-sender over ZeroMQ to a real
`txray collect` writing a fresh SQLite file, against raw SQLite inserts of the same rows into the same
schema (prepared statements, one big transaction) by the same tool, alternating, in one run.

The collector's time runs from the moment the sender starts sending (its batches are generated and
serialized before) until every transaction is stored (polled with SELECT count(*)); the raw time is the
inserts plus COMMIT. Prints both rates (transactions/s), medians of RUNS runs, and the ratio; checks that
no row was lost. Target: collector >= 80% of raw.

The machine is shared (other builds and tests run beside the benchmark), and wall-clock rates then
measure the neighbours as much as txray. So the CPU time is printed too: the raw inserter's thread, and
the collector's threads (receiving+decoding thread "txray", writer thread "txray-writer", libzmq's I/O
threads) read from /proc over the same window. The collector is a two-stage pipeline, so on two
otherwise idle cores its rate is bounded by its busiest thread: N / max(thread CPU) is printed as the
"CPU-bound rate" beside the raw inserter's N / CPU.
Environment: TXRAY_BENCH_TX (default 50000), TXRAY_BENCH_RUNS (default 5); TXRAY_BENCH_COLLECT_ARGS (more
`txray collect` options, e.g. --no-redact), TXRAY_BENCH_SENDER_ARGS (more txray-test-sender options, e.g.
--queries: transactions with query strings for the collector's masking to scan).

TXRAY_BENCH_DECODE=ROUNDS also times the receiving thread's decode alone (parse, truncate, validate, mask)
on the same transactions, masking off / default / the default written as a regex: CPU ns per transaction."""
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else "build")
TXRAY = os.path.join(BUILD, "bin", "txray")
SENDER = os.path.join(BUILD, "bin", "txray-test-sender")
N = int(os.environ.get("TXRAY_BENCH_TX", "50000"))
RUNS = int(os.environ.get("TXRAY_BENCH_RUNS", "5"))
STEPS = 10
PER_BATCH = int(os.environ.get("TXRAY_BENCH_PER_BATCH", "100"))
COLLECT_ARGS = os.environ.get("TXRAY_BENCH_COLLECT_ARGS", "").split()
SENDER_ARGS = os.environ.get("TXRAY_BENCH_SENDER_ARGS", "").split()
DECODE_ROUNDS = int(os.environ.get("TXRAY_BENCH_DECODE", "0"))


def counts(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return (con.execute("SELECT count(*) FROM transactions").fetchone()[0],
                con.execute("SELECT count(*) FROM steps").fetchone()[0])
    finally:
        con.close()


def stored_so_far(db):
    """Rows are numbered 1, 2, … in a fresh store: max(id) is the count, at the cost of one index probe
    (a count(*) every few milliseconds would compete with the collector for the CPU)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("SELECT coalesce(max(id), 0) FROM transactions").fetchone()[0]
    finally:
        con.close()


CLK_TCK = os.sysconf("SC_CLK_TCK")


def thread_cpu(pid):
    """{thread name: CPU seconds} of a live process, threads of one name added up."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime
        key = "zmq" if name.startswith("ZMQ") else name
        out[key] = out.get(key, 0.0) + cpu
    return out


def remove_db(db):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


def raw_run(tmp, i, no_checkpoint=False):
    db = os.path.join(tmp, f"raw{i}.db")
    extra = ["--raw-no-checkpoint"] if no_checkpoint else []
    out = json.loads(subprocess.run([SENDER, "--raw-sqlite", db, "--transactions", str(N), "--steps", str(STEPS),
                                     "--per-batch", str(PER_BATCH), "--seed", str(i + 1), *extra, *SENDER_ARGS],
                                    check=True, capture_output=True, text=True).stdout)
    assert counts(db) == (N, N * STEPS), counts(db)
    remove_db(db)
    return N / out["seconds"], out["cpu_seconds"]


def writer_run(tmp, i):
    """Diagnostic: the store's Writer alone (no ZeroMQ, no decoding) on the same batches."""
    db = os.path.join(tmp, f"writer{i}.db")
    out = subprocess.run([SENDER, "--writer-sqlite", db, "--transactions", str(N), "--steps", str(STEPS),
                          "--per-batch", str(PER_BATCH), "--seed", str(i + 1), *SENDER_ARGS],
                         check=True, capture_output=True, text=True).stdout
    assert counts(db) == (N, N * STEPS), counts(db)
    remove_db(db)
    out = json.loads(out)
    return N / out["seconds"], out["cpu_seconds"]


def collector_run(tmp, i):
    db = os.path.join(tmp, f"col{i}.db")
    ep = f"ipc://{tmp}/c{i}.sock"
    # --no-shed: this measures storing every row. On a loaded machine the writer queue fills and load
    # shedding would store fewer transactions than were sent, and the wait for all N would never end.
    col = subprocess.Popen([TXRAY, "collect", "--listen", ep, "--db", db, "--status-interval", "0", "--no-shed",
                            *COLLECT_ARGS],
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not os.path.exists(ep[len("ipc://"):]):
        if time.monotonic() > deadline:
            raise RuntimeError("collector did not start")
        time.sleep(float(os.environ.get("TXRAY_BENCH_POLL_S", "0.02")))
    sender = subprocess.Popen([SENDER, "--endpoint", ep, "--transactions", str(N), "--steps", str(STEPS),
                               "--per-batch", str(PER_BATCH), "--seed", str(i + 1), *SENDER_ARGS],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sender.stderr.readline()  # "sending N messages": generation is done
    t0 = time.perf_counter()
    cpu0 = thread_cpu(col.pid)
    while True:
        if os.path.exists(db) and stored_so_far(db) >= N:
            break
        time.sleep(float(os.environ.get("TXRAY_BENCH_POLL_S", "0.02")))
    secs = time.perf_counter() - t0
    cpu1 = thread_cpu(col.pid)
    cpu = {k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1}
    sender.communicate()
    col.send_signal(signal.SIGINT)
    col.communicate(timeout=60)
    assert col.returncode == 0
    stored = counts(db)
    if stored != (N, N * STEPS):
        raise AssertionError(f"lost rows: stored {stored}, sent {(N, N * STEPS)}")
    remove_db(db)
    return N / secs, cpu


def main():
    with tempfile.TemporaryDirectory(prefix="txray-bench-ingest-") as tmp:
        raw, col, wr, raw_cpu, col_cpu, wr_cpu, raw_nc = [], [], [], [], [], [], []
        for i in range(RUNS):
            rate, cpu = raw_run(tmp, i)
            raw.append(rate)
            raw_cpu.append(cpu)
            rate, cpu = collector_run(tmp, i)
            col.append(rate)
            col_cpu.append(cpu)
            rate, cpu = writer_run(tmp, i)
            wr.append(rate)
            wr_cpu.append(cpu)
            raw_nc.append(raw_run(tmp, i, no_checkpoint=True)[0])
            threads = "  ".join(f"{k} {v:.2f}s" for k, v in sorted(col_cpu[-1].items()))
            print(f"  run {i + 1}: raw SQLite {raw[-1]:,.0f} tx/s (CPU {raw_cpu[-1]:.2f}s)   collector {col[-1]:,.0f} tx/s "
                  f"(CPU {threads})   store writer alone {wr[-1]:,.0f} tx/s   raw without checkpoint {raw_nc[-1]:,.0f} tx/s",
                  flush=True)
    r, c, w = statistics.median(raw), statistics.median(col), statistics.median(wr)
    r_cpu = statistics.median(raw_cpu)
    busiest = statistics.median(max(v for k, v in cpu.items()) for cpu in col_cpu)
    total = statistics.median(sum(cpu.values()) for cpu in col_cpu)
    extra = " ".join(SENDER_ARGS + COLLECT_ARGS)
    print(f"collector ingest of {N:,} {STEPS}-step transactions ({PER_BATCH} per message), median of {RUNS} runs"
          f"{' (' + extra + ')' if extra else ''}:")
    print(f"  raw SQLite inserts (baseline): {r:>10,.0f} tx/s")
    print(f"  txray collect (ZeroMQ->SQLite): {c:>9,.0f} tx/s")
    paired = statistics.median(cr / rr for cr, rr in zip(col, raw))
    print(f"  ratio collector/raw: {c / r:.1%}   (target >= 80%; no loss: every row counted)")
    print(f"  median of the per-run ratios (each collector run beside the raw run before it): {paired:.1%}")
    print(f"  CPU-bound rates: raw {N / r_cpu:,.0f} tx/s per CPU-second; collector's busiest thread "
          f"{N / busiest:,.0f} tx/s -> {r_cpu / busiest:.1%} of raw (collector CPU in all threads: "
          f"{total / r_cpu:.2f}x raw's)")
    nc = statistics.median(raw_nc)
    print(f"  raw SQLite without the WAL checkpoint its commit runs (the collector checkpoints on a thread of "
          f"its own): {nc:,.0f} tx/s; collector = {c / nc:.1%} of that")
    print(f"  diagnostic: the store's writer alone (no ZeroMQ, no decode): {w:,.0f} tx/s = {w / r:.1%} of raw "
          f"(CPU {statistics.median(wr_cpu):.2f}s vs raw {r_cpu:.2f}s)")
    recv = statistics.median(cpu.get("txray", 0.0) for cpu in col_cpu)
    print(f"  the receiving thread (decode, checks, masking; 'txray'): {recv:.3f}s CPU = {recv / N * 1e6:.2f} us per "
          f"transaction (median)")
    if DECODE_ROUNDS:
        out = json.loads(subprocess.run([SENDER, "--decode-bench", str(DECODE_ROUNDS), "--transactions", str(N),
                                         "--steps", str(STEPS), "--per-batch", str(PER_BATCH), *SENDER_ARGS],
                                        check=True, capture_output=True, text=True).stdout)
        d = out["decode_ns_per_tx"]
        print(f"  decode alone, CPU ns per transaction (median of {DECODE_ROUNDS} rounds, taking turns): masking off "
              f"{d['off']:,.0f}, default {d['default']:,.0f} ({d['default'] - d['off']:+,.0f}), default as a regex "
              f"{d['pattern']:,.0f} ({d['pattern'] - d['off']:+,.0f}); values masked per round {out['masked']}")
    print(f"  machine load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
