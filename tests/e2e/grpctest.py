"""What the gRPC end-to-end tests share (test_rpc_grpc.py, test_rpc_grpc_shim.py): a server started and
waited for until it prints its port, and the store queries and row filters both check with."""
import os
import re
import sqlite3
import subprocess

from txraytest import wait_for


def unattributed_calls(db, app):
    """(app's unattributed HTTP_CALL steps, how many of them are linked to a callee)"""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return con.execute(
            "SELECT count(*), count(s.callee_tx_id) FROM steps s JOIN transactions t ON t.id = s.tx_id "
            "WHERE t.app = ? AND t.kind = 'unattributed' AND s.kind = 'HTTP_CALL'", (app,)).fetchone()
    except sqlite3.Error:
        return (0, 0)
    finally:
        con.close()


def grpc_rows(tx):
    """A transaction's call rows (gRPC calls are HTTP_CALL rows)."""
    return [s for s in tx["steps"] if s["kind"] == "HTTP_CALL"]


def serve_grpc(test, role, argv, env):
    """Starts argv (a server printing 'listening on grpc port N'), logging to the test's tmp dir; returns
    (process, port) once it listens, failing the test if it exits first."""
    log = open(os.path.join(test.tmp, role + ".log"), "w+")
    test.addCleanup(log.close)
    p = test.spawn(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    port = []

    def listening():
        log.seek(0)
        m = re.search(r"listening on grpc port (\d+)", log.read())
        if m:
            port.append(int(m.group(1)))
        test.assertIsNone(p.poll(), f"{role} exited")
        return bool(port)

    wait_for(listening, 30, what=f"{role} listening")
    return p, port[0]
