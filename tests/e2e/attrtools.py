"""Helpers of the attribution tests (tests/e2e/test_attr_*.py, issue 10): a front calls a back-end once
per request (front GET /r/<id> -> back-end GET /b/<id>) under many concurrent keep-alive connections, with
a unique id per request; then every front transaction is checked against the call it must hold.

What is checked (spec section 4 of issue 10):
- wrong: HTTP_CALL rows whose /b/<id> is not their transaction's own id — must be 0;
- exact: transactions holding exactly their own call and nothing else — >= 99% (Java: printed only);
- missing: requests whose own call is not in their transaction; it must equal the number of HTTP_CALL
  steps `txray show --unattributed --json --app APP` gives for the front app (the calls are kept as
  unattributed steps of the process, never lost)."""
import http.client
import os
import re
import subprocess
import threading

from txraytest import PYTHON, bare_env, free_port, show_json, wait_port

BACKEND = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attr_backend.py")
CALL_ID = re.compile(r"/b/(\d+)")


def start_backend(test):
    """The threaded keep-alive python back-end (not traced); returns its port."""
    port = free_port()
    test.spawn([PYTHON, BACKEND, str(port)], env=bare_env(), stdout=subprocess.DEVNULL)
    wait_port(port)
    return port


def drive(port, requests, connections, expect=lambda i: f"b {i}\n"):
    """GET /r/<i> for i in 0..requests-1 over `connections` keep-alive connections, all of them open and
    sending at the same time (a barrier). Every answer must be 200 and contain expect(i); returns the
    failures as a list of strings (empty when all went well)."""
    failures = []
    lock = threading.Lock()
    barrier = threading.Barrier(connections)

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.connect()
        barrier.wait()
        for i in range(k, requests, connections):
            try:
                conn.request("GET", f"/r/{i}")
                r = conn.getresponse()
                body = r.read().decode("latin-1")
                ok = r.status == 200 and expect(i) in body
                if r.getheader("connection", "").lower() == "close":
                    conn.close()
            except (OSError, http.client.HTTPException) as e:
                ok, body = False, repr(e)
                conn.close()
            if not ok:
                with lock:
                    failures.append(f"/r/{i}: {body[:200]!r}")
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def figures(db, app, requests):
    """The attribution figures of the front app `app` after `requests` requests (ids 0..requests-1)."""
    txs = [t for t in show_json(db, "--app", app, "--last", str(4 * requests + 100))
           if t.get("kind") != "unattributed" and t["name"].startswith("GET /r/")]
    own_ids = [t["name"][len("GET /r/"):] for t in txs]
    wrong, exact, missing, wrong_examples, missing_ids = 0, 0, 0, [], set()
    for t, own in zip(txs, own_ids):
        call_ids = [m.group(1) if (m := CALL_ID.search(s.get("url", "") or s.get("text", ""))) else "?"
                    for s in t["steps"] if s["kind"] == "HTTP_CALL"]
        bad = [c for c in call_ids if c != own]
        wrong += len(bad)
        if bad and len(wrong_examples) < 5:
            wrong_examples.append(f"{t['name']} (txid {t['txid']}) holds the calls of {bad}")
        if call_ids == [own]:
            exact += 1
        if own not in call_ids:
            missing += 1
            missing_ids.add(own)
    try:
        unattributed = [s for s in show_json(db, "--unattributed", "--app", app) if s.get("kind") == "HTTP_CALL"]
    except subprocess.CalledProcessError as e:  # a txray without --unattributed: say so in the figures
        unattributed = None
        print(f"txray show --unattributed failed: {e.stderr.strip()}", flush=True)
    unattr_ids = {m.group(1) for s in unattributed or []
                  if (m := CALL_ID.search(s.get("url", "") or s.get("text", "")))}
    return {
        "requests": requests,
        "transactions": len(txs),
        "distinct": len(set(own_ids)),
        "exact": exact,
        "wrong": wrong,
        "missing": missing,
        # a folded line (past the step limit) stands for `count` calls
        "unattributed_calls": None if unattributed is None else sum(s.get("count", 1) for s in unattributed),
        "unattributed_not_missing": sorted(unattr_ids - missing_ids, key=int)[:10],
        "wrong_examples": wrong_examples,
    }


def report(label, connections, f):
    """Prints one line of figures (CTest's -V and the test log show it)."""
    share = 100.0 * f["exact"] / max(1, f["requests"])
    print(f"\n{label}: {f['requests']} requests over {connections} connections -> {f['transactions']} front "
          f"transactions; exact {f['exact']} ({share:.1f}%), wrong calls {f['wrong']}, calls missing "
          f"{f['missing']}, unattributed HTTP_CALL steps {f['unattributed_calls']}", flush=True)
    for e in f["wrong_examples"]:
        print(f"  wrong: {e}", flush=True)
    return share


def check(test, label, connections, f, min_exact=99.0):
    """Spec section 4: every request made one transaction, 0 wrong calls, >= min_exact % exact, and the
    calls missing from transactions are exactly the front's unattributed HTTP_CALL steps."""
    share = report(label, connections, f)
    test.assertEqual(f["transactions"], f["requests"], "a front request made no transaction (or two)")
    test.assertEqual(f["distinct"], f["requests"], "two transactions for one request path")
    test.assertEqual(f["wrong"], 0, f"calls in a transaction that did not make them: {f['wrong_examples']}")
    test.assertGreaterEqual(share, min_exact, "share of transactions holding exactly their own call")
    test.assertEqual(f["unattributed_calls"], f["missing"],
                     "unattributed HTTP_CALL steps of the front != calls missing from its transactions")
    test.assertEqual(f["unattributed_not_missing"], [], "unattributed calls of requests that hold their call")
