"""Helpers of the reliability tests: run a subject program bare and under the agent, drive it with plain
HTTP requests, and compare what the two runs did."""
import os
import socket
import subprocess

from txraytest import BIN, agent_env, bare_env, free_port, wait_port

SUBJECTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "subjects")


def subject(name):
    """Path of a compiled subject (subjects/NAME.c -> bin/txray-rel-NAME)."""
    return os.path.join(BIN, "txray-rel-" + name.replace("_", "-"))


def get(port, path, timeout=10):
    """One HTTP/1.1 GET on a fresh connection, read until the server closes it; returns the body (b"" if
    the server died)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return body if head.startswith(b"HTTP/1.1 200") or head.startswith(b"HTTP/1.0 200") else b"<" + head[:40] + b">"


class Run:
    """One run of a server subject (argv: "PORT" stands for a free port, waited for), bare when endpoint
    is None; after finish(): its exit status, stdout and stderr."""

    def __init__(self, test, argv, endpoint=None, app=None, extra_env=None):
        self.port = free_port()
        env = agent_env(endpoint, app=app, extra=extra_env) if endpoint else bare_env(extra_env)
        self.proc = test.spawn([str(self.port) if a == "PORT" else str(a) for a in argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        wait_port(self.port)

    def finish(self, timeout=30):
        out, err = self.proc.communicate(timeout=timeout)
        self.rc, self.out, self.err = self.proc.returncode, out.decode(), err.decode()
        return self

