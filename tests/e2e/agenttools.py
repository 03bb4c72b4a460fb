"""Helpers of the agent's end-to-end tests (tests/e2e/test_agent_*.py): starting the burner sample and
python's http.server under the agent, fetching with curl, reading the agents table."""
import os
import sqlite3
import subprocess

from txraytest import BIN, PYTHON, agent_env, bare_env, free_port, wait_port

BURNER = os.path.join(BIN, "txray-burner")
CURL = "/usr/bin/curl"


def curl(url, timeout=30):
    """GETs url; returns (http_code, total bytes received: headers + body)."""
    out = subprocess.run([CURL, "-s", "-o", "/dev/null", "--max-time", str(timeout), "-w",
                          "%{http_code} %{size_header} %{size_download}", url],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1]) + int(out[2])


def start_backend(test, nbytes):
    port = free_port()
    test.spawn([BURNER, "backend", "--listen", f"127.0.0.1:{port}", "--bytes", str(nbytes)],
               stdout=subprocess.DEVNULL, env=bare_env())
    wait_port(port)
    return port


def start_burner(test, endpoint, backend_port, burn_ms=50, workers=0, app="burner", extra_env=None):
    port = free_port()
    env = agent_env(endpoint, app=app, extra=extra_env) if endpoint else bare_env()
    p = test.spawn([BURNER, "serve", "--listen", f"127.0.0.1:{port}", "--backend",
                    f"127.0.0.1:{backend_port}", "--burn-ms", str(burn_ms), "--workers", str(workers)],
                   stdout=subprocess.DEVNULL, env=env)
    wait_port(port)
    return p, port


def start_http_server(test, endpoint, folder, app="files"):
    port = free_port()
    env = agent_env(endpoint, app=app) if endpoint else bare_env()
    p = test.spawn([PYTHON, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", folder],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wait_port(port)
    return p, port


def agents(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM agents ORDER BY id")]
    finally:
        con.close()


def stop(proc, timeout=20):
    """SIGTERM, then wait: the agent's exit handlers flush what it recorded."""
    proc.terminate()
    return proc.wait(timeout=timeout)
