"""Shared harness of the attribution tests (issue 10; tests/e2e/test_attr_*.py).

A threaded back-end (attr/back.py, traced as app "back") answers `GET /b/<id>`; a front under test
(traced as its own app, under `txray run`, so with the runtime shims) answers `GET /r/<id>` by calling it
once. Many keep-alive clients at once send a unique id per request. Then, over the front's transactions
(docs/agent.md, "Runtimes"; spec section 4):
- wrong:   HTTP_CALL rows whose URL is another request's (`/b/<other id>`) — must be 0;
- exact:   transactions holding exactly one HTTP_CALL, their own — must be >= 99%;
- missing: transactions without their own call — must equal the unattributed HTTP_CALL steps of the
           front app (`txray show --unattributed --json --app APP`), and those are the missing ids.
With sql=True the same is checked for the SQL row whose text carries the id (`req_<id>`).
"""
import json
import os
import signal
import sqlite3
import subprocess
import time

from txraytest import (PYTHON, SOURCE_DIR, TXRAY, Collector, bare_env, count_transactions, free_port, get_all, show_json,
                       wait_for, wait_port)

ATTR = os.path.join(SOURCE_DIR, "tests", "e2e", "attr")
CONNECTIONS = 24
REQUESTS = 480


def drive(port, requests=REQUESTS, connections=CONNECTIONS):
    """GET /r/<i> over `connections` keep-alive clients at once; {i: body}."""
    out, errors = get_all(port, [f"/r/{i}" for i in range(requests)], connections)
    if errors:
        raise AssertionError(f"client errors: {errors[:3]}")
    return {int(p.rsplit("/", 1)[1]): body for p, (_, body) in out.items()}


def count_front(db, app):
    return count_transactions(db, app, "GET /r/%")


def unattributed_steps(db, app):
    """The front's unattributed steps: `txray show --unattributed --json --app APP` (one object per step);
    if this txray has no such option yet, the steps of its kind 'unattributed' transactions in the store."""
    r = subprocess.run([TXRAY, "show", "--db", db, "--unattributed", "--json", "--app", app],
                       capture_output=True, text=True)
    if r.returncode == 0:
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()], "txray show --unattributed"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT s.kind, x.text, t.app, 1, 0 FROM steps s JOIN transactions t ON t.id = s.tx_id "
                           "LEFT JOIN texts x ON x.id = s.text_id WHERE t.kind = 'unattributed' AND t.app = ? "
                           "AND s.kind NOT IN ('START', 'END') UNION ALL "
                           "SELECT m.kind, x.text, t.app, m.count, 1 FROM step_summaries m "
                           "JOIN transactions t ON t.id = m.tx_id LEFT JOIN texts x ON x.id = m.text_id "
                           "WHERE t.kind = 'unattributed' AND t.app = ?", (app, app)).fetchall()
    finally:
        con.close()
    return ([{"kind": k, "text": t or "", "app": a, "count": n, "folded": bool(f)} for k, t, a, n, f in rows],
            "store (no show --unattributed)")


def own(kind, text, rid):
    """Whether a step of this kind and text belongs to request rid (None: a step not about a request)."""
    if kind == "HTTP_CALL":
        return text.rsplit("/", 1)[-1] == rid if "/b/" in text else None
    if kind == "SQL":
        if "req_" not in text:
            return None
        return text.split("req_", 1)[1].split()[0].strip(",;") == rid
    return None


def check_kind(test, name, kind, front, unattributed, exact_share=0.99, count_unattributed=True):
    """Asserts the criteria for one kind of step (count_unattributed: unattributed = missing); returns the
    figures line."""
    wrong = exact = unanswered = 0
    missing = set()
    for t in front:
        rid = t["name"].rsplit("/", 1)[1]
        steps = [s for s in t["steps"] if s["kind"] == kind and own(kind, s["text"], rid) is not None]
        mine = [own(kind, s["text"], rid) for s in steps]
        wrong += mine.count(False)
        if mine == [True]:
            exact += 1
        if True not in mine:
            missing.add(rid)
        # an own call row whose response never reached it (read on a thread that may not record there)
        unanswered += sum(1 for s in steps if kind == "HTTP_CALL" and own(kind, s["text"], rid) and "status" not in s)
    # Past the step limit a container folds steps into per-(kind, fingerprint) lines ("folded", "count"):
    # those count, but name one request only.
    loose = [s for s in unattributed if s["kind"] == kind and
             (own(kind, s["text"], "") is not None or (s.get("folded") and s["text"] == "(other)"))]
    count = sum(s.get("count", 1) for s in loose)
    folded = sum(s.get("count", 1) for s in loose if s.get("folded"))
    n = len(front)
    line = (f"{name} {kind}: {n} requests over {CONNECTIONS} connections: exact {exact} "
            f"({100.0 * exact / n:.2f}%), wrong {wrong}, missing {len(missing)}, unattributed {count}"
            + (f" ({folded} folded)" if folded else "")
            + (f"; {unanswered} own calls without their response" if unanswered else ""))
    print(line, flush=True)
    test.assertEqual(wrong, 0, f"{kind} rows in another request's transaction: {line}")
    test.assertGreaterEqual(exact, exact_share * n, line)
    if not count_unattributed:
        return line
    test.assertEqual(count, len(missing), line)
    if not folded:
        ids = sorted(s["text"].rsplit("/", 1)[-1] if kind == "HTTP_CALL" else
                     s["text"].split("req_", 1)[1].split()[0] for s in loose)
        test.assertEqual(ids, sorted(missing), "the unattributed steps are not those missing")
    return line


def start_back(test, prefix=(), env=None):
    """The threaded back-end (attr/back.py) on a free port, after `prefix` (e.g. a `txray run` command;
    none: not traced); returns (process, port)."""
    port = free_port()
    proc = test.spawn([*prefix, PYTHON, os.path.join(ATTR, "back.py"), str(port)], env=env or bare_env(),
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return proc, port


def check_front(test, db, app, requests=REQUESTS, sql=False, exact_share=0.99, count_unattributed=True, log=""):
    """The criteria over the transactions of the front `app` in db, once its process has exited (so that
    its last unattributed steps were sent); `log`: the front's output, shown when transactions are
    missing. Returns the figures lines."""
    txs = show_json(db, "--app", app, "--last", str(10 * requests))
    front = [t for t in txs if t.get("kind") != "unattributed" and t["name"].startswith("GET /r/")]
    test.assertEqual(len(front), requests, log[-2000:])
    test.assertEqual(len({t["name"] for t in front}), requests, "two transactions for one request")
    unattributed, source = unattributed_steps(db, app)
    print(f"{app}: unattributed steps from {source}: {len(unattributed)} "
          f"({', '.join(sorted({s['kind'] for s in unattributed})) or 'none'})", flush=True)
    lines = [check_kind(test, app, "HTTP_CALL", front, unattributed, exact_share, count_unattributed)]
    if sql:
        lines.append(check_kind(test, app, "SQL", front, unattributed, exact_share, count_unattributed))
    return lines


def run_front(test, app, front_cmd, sql=False, requests=REQUESTS, extra_env=None, shim=True, exact_share=None):
    """Runs back-end and front (front_cmd: a list with {port} and {back} placeholders) under `txray run`,
    drives the front, checks every answer and the attribution criteria. shim=False (run with
    TXRAY_RUNTIME_HINTS=0): only "never wrong" is asserted; exact_share: the exact share asked for (default
    0.99 with the shim). Returns the figures lines."""
    if not shim:
        extra_env = dict(extra_env or {}, TXRAY_RUNTIME_HINTS="0")
    if exact_share is None:
        exact_share = 0.99 if shim else 0.0
    env = bare_env(extra_env)
    for k in ("NODE_OPTIONS", "PYTHONPATH"):
        env.pop(k, None)
    port = free_port()
    with Collector(test.tmp) as col:
        bproc, back = start_back(test, [TXRAY, "run", "--collector", col.endpoint, "--app", "back", "--"], env)
        cmd = [a.format(port=port, back=back) for a in front_cmd]
        flog = open(os.path.join(test.tmp, "front.log"), "wb")
        fproc = test.spawn([TXRAY, "run", "--collector", col.endpoint, "--app", app, "--", *cmd], env=env,
                           stdout=flog, stderr=subprocess.STDOUT)
        wait_port(port)
        t0 = time.monotonic()
        answers = drive(port, requests)
        elapsed = time.monotonic() - t0
        for i in range(requests):
            test.assertTrue(answers.get(i, "").startswith(f"r {i} 200 b {i}"), f"answer {i}: {answers.get(i)}")
        wait_for(lambda: count_front(col.db, app) >= requests, 60, what=f"{requests} front transactions")
        for p in (fproc, bproc):
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)
        flog.close()
        time.sleep(1.5)  # the front's last batch (its unattributed steps are sent at exit)
    with open(os.path.join(test.tmp, "front.log"), "rb") as f:
        front_log = f.read().decode("utf-8", "replace")
    print(f"{app}: {requests} requests in {elapsed:.2f} s", flush=True)
    return check_front(test, col.db, app, requests, sql, exact_share, shim, front_log)
