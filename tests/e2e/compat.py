"""Shared harness of the real-program compatibility matrix (issue 12; tests/e2e/test_compat_*.py).

Each program runs a deterministic workload twice: bare, and under the agent with a real collector. The
test compares what the program produced (exit status, stdout, stderr, the answers a server gave, files it
wrote) and checks that the agent did its job (the transactions and steps it stored). What is legitimately
variable between two runs is normalized, and only that: each `normalize_*` below says what and why.
Every case adds a row to the module's summary table, printed when the module ends:

    program | workload | bare status | agent status | identical | transactions stored

A difference under the agent is an agent bug (the agent must never change its host's behaviour).
"""
import functools
import hashlib
import os
import re
import sqlite3
import subprocess
import time

from txraytest import AGENT, TXRAY, bare_env

_ROWS = []


def record(program, workload, bare_status, agent_status, identical, stored, note=""):
    _ROWS.append((program, workload, str(bare_status), str(agent_status), "yes" if identical else "NO",
                  str(stored), note))


def matrix_case(program):
    """Decorates a test method: when it fails, its row says so (identical NO, and the first line of the
    failure) before the failure propagates, so the printed table shows which program differed."""
    def wrap(fn):
        @functools.wraps(fn)
        def run_case(*args, **kw):
            try:
                return fn(*args, **kw)
            except AssertionError as e:
                record(program, "(failed)", "?", "?", False, "?", (str(e).splitlines() or [""])[0][:100])
                raise
        return run_case
    return wrap


def print_table(title):
    """The module's summary table (tearDownModule)."""
    if not _ROWS:
        return
    head = ("program", "workload", "bare", "agent", "identical", "stored", "")
    rows = [head] + _ROWS
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [f"compatibility matrix: {title}"]
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    print("\n" + "\n".join(lines), flush=True)


# --- running programs ---

def run(args, env, cwd=None, timeout=60, stdin=None):
    """Runs a program to its end: (exit status, stdout bytes, stderr bytes)."""
    r = subprocess.run(args, env=env, cwd=cwd, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL if stdin is None else None,
                       input=stdin)
    return r.returncode, r.stdout, r.stderr


def traced_env(endpoint, app, mode=None, extra=None):
    """clean_env with the agent preloaded by LD_PRELOAD (what `txray run` sets up, without its notice on
    stderr, so that stderr can be compared byte for byte)."""
    env = clean_env(extra)
    env.update({"LD_PRELOAD": AGENT, "TXRAY_COLLECTOR": endpoint, "TXRAY_APP": app})
    if mode:
        env["TXRAY_MODE"] = mode
    return env


def txray_run(endpoint, app, mode=None):
    """The `txray run` prefix (servers in runtimes with a shim: Node.js, Python asyncio)."""
    return [TXRAY, "run", "--collector", endpoint, "--app", app, *(["--mode", mode] if mode else []), "--"]


def clean_env(extra=None):
    """The environment of both runs: no agent, no runtime shims, the C locale (so messages do not depend
    on the user's settings); `extra` on top."""
    env = bare_env()
    for k in ("NODE_OPTIONS", "PYTHONPATH", "TXRAY_MODE", "TXRAY_APP", "TXRAY_COLLECTOR"):
        env.pop(k, None)
    env["LC_ALL"] = "C"
    env.update(extra or {})
    return env


# --- normalization (each rule says what varies between two honest runs, and why) ---

# `txray run` says on stderr where the data goes: its own line, not the program's output.
_TXRAY_RUN_LINE = re.compile(rb"^txray run: .*\n", re.M)


def strip_txray_run(err):
    return _TXRAY_RUN_LINE.sub(b"", err)


def sha(data):
    return hashlib.sha256(data).hexdigest()[:16]


def agent_loaded(pid):
    """Whether the agent library is mapped in process pid (so the "traced" run really was)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "libtxray-agent.so" in f.read()
    except OSError:
        return False


# --- what the agent stored ---

def _query(db, sql, args=()):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def transactions(db, app):
    """(name, status, kind) of app's transactions (no unattributed containers)."""
    if not os.path.exists(db):
        return []
    try:
        return _query(db, "SELECT name, status, kind FROM transactions WHERE app = ? AND "
                          "kind IS NOT 'unattributed' ORDER BY id", (app,))
    except sqlite3.Error:
        return []


def process_name(cmd):
    """The name of a process-mode transaction: argv[0]'s base name and the arguments, 200 characters."""
    return " ".join([os.path.basename(cmd[0]), *cmd[1:]])[:200]


def wait_named(db, app, names, timeout=20.0):
    """Waits until app has a transaction of each of these names; fails naming those still missing."""
    deadline = time.monotonic() + timeout
    while True:
        missing = set(names) - {t[0] for t in transactions(db, app)}
        if not missing:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{app}: no transaction stored for {sorted(missing)}")
        time.sleep(0.05)


def count(db, app):
    return len(transactions(db, app))


def steps(db, app, kind, include_unattributed=False):
    """Texts of app's steps of this kind, folded summaries expanded to their count."""
    where = "" if include_unattributed else "AND t.kind IS NOT 'unattributed'"
    rows = _query(db, f"SELECT x.text FROM steps s JOIN transactions t ON t.id = s.tx_id "
                      f"LEFT JOIN texts x ON x.id = s.text_id WHERE t.app = ? AND s.kind = ? {where}", (app, kind))
    out = [r[0] or "" for r in rows]
    for text, n in _query(db, f"SELECT x.text, m.count FROM step_summaries m JOIN transactions t ON t.id = m.tx_id "
                              f"LEFT JOIN texts x ON x.id = m.text_id WHERE t.app = ? AND m.kind = ? {where}",
                          (app, kind)):
        out.extend([text or ""] * n)
    return out


def agents_of(db, app):
    """(program, mode, drops_queue_full + drops_send_failed + drops_encode_failed, internal_errors)."""
    return _query(db, "SELECT program, mode, drops_queue_full + drops_send_failed + drops_encode_failed, "
                      "internal_errors FROM agents WHERE app = ?", (app,))
