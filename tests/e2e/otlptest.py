"""Helpers of the OTLP export tests (test_otlp_*.py): the Node.js receiver that decodes with the official
OpenTelemetry definitions (tests/e2e/otlp/receiver.js, @opentelemetry/otlp-transformer installed by
scripts/install-deps.sh), and reading what it received."""
import json
import os
import re
import subprocess
import urllib.request

from txraytest import SOURCE_DIR, free_port, wait_port

RECEIVER_DIR = os.path.join(SOURCE_DIR, "tests", "e2e", "otlp")
NODE = "/usr/bin/node"

SPAN_KIND = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3}
STATUS_ERROR = 2


def receiver_installed():
    return os.path.exists(os.path.join(RECEIVER_DIR, "node_modules", "@opentelemetry", "otlp-transformer",
                                       "package.json"))


class Receiver:
    """receiver.js on a free port, writing the spans it decodes to a JSON-lines file."""

    def __init__(self, test, workdir, name="receiver", extra=()):
        if not receiver_installed():
            raise AssertionError(f"{RECEIVER_DIR}/node_modules is missing: run scripts/install-deps.sh "
                                 "(it installs the receiver's pinned @opentelemetry/otlp-transformer with npm ci)")
        self.port = free_port()
        self.out = os.path.join(workdir, f"{name}.jsonl")
        self.log = open(os.path.join(workdir, f"{name}.log"), "ab")
        self.proc = test.spawn([NODE, os.path.join(RECEIVER_DIR, "receiver.js"), "--port", str(self.port),
                                "--out", self.out, *map(str, extra)], stdout=self.log, stderr=subprocess.STDOUT)
        wait_port(self.port)
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def stats(self):
        with urllib.request.urlopen(f"{self.endpoint}/stats", timeout=10) as r:
            return json.loads(r.read())

    def spans(self):
        if not os.path.exists(self.out):
            return []
        with open(self.out) as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.log.close()


def otlp_status(log_text):
    """The OTLP part of the collector's last status line, as numbers."""
    lines = [l for l in log_text.splitlines() if ", otlp: sent" in l]
    if not lines:
        return None
    m = re.search(r"otlp: sent (\d+) tx \((\d+) spans\), queued (\d+), dropped (\d+), failed (\d+), rejected spans (\d+)",
                  lines[-1])
    keys = ["sent_tx", "sent_spans", "queued", "dropped", "failed", "rejected_spans"]
    return dict(zip(keys, map(int, m.groups()))) | {"line": lines[-1]}
