"""The collector as a second line against secrets (docs/security.md, "What is recorded"): a batch as a
foreign or older agent could send it (the wire format is documented; txray-test-sender --batch-json
sends it as written) carries a distinct secret in every place a credential can ride — a query
attribute, a transaction name's query, a call URL's query, URL userinfo, a `token` attribute, an
attribute holding a URL, a database URL, a message, the command line. `txray collect` masks each on
ingest: none is found in the store's files, `txray show` (JSON and text), any `txray report` format, the
live OTLP export or `txray export`; the status line's masked count equals the number planted; the
values around them (`page=2`, `user=bob`, the user name of a userinfo) are kept. With `--no-redact` the
same searches find every secret (so they do look in the right places), and the status line says OFF.
"""
import base64
import glob
import json
import os
import re
import subprocess
import unittest

from otlptest import Receiver
from txraytest import SENDER, TXRAY, Collector, TxrayTestCase, show_json, wait_for, wait_transactions

TXID = 0x5ec7e75ec7e75ec7
SECRETS = {
    "command line": "CMDSECRET31",
    "transaction name query": "NAMESECRET32",
    "query attribute": "QUERYSECRET33",
    "token attribute": "TOKENSECRET34",
    "call URL query": "CALLSECRET35",
    "call URL userinfo": "USERINFOSECRET36",
    "attribute holding a URL": "ATTRURLSECRET37",
    "database URL userinfo": "DBSECRET38",
    "message": "MSGSECRET39",
}
KEPT = ["page=2", "user=bob", "next=/home", "https://alice:?@api.example", "size=2", "--port 8080",
        "password=?&next=/home&page=2"]
MS = 1_000_000


def read(path):
    with open(path) as f:
        return f.read()


def batch_json():
    """A txray.v1.Batch in protobuf's JSON form: one transaction, the profile's sums kept."""
    step = lambda kind, gap, **kw: {"kind": kind, "parent": -1, "gapNs": str(gap), **kw}
    steps = [
        step("START", 0),
        step("HTTP_CALL", 2 * MS, text=f"http://backend:8080/stock?api_key={SECRETS['call URL query']}&user=bob",
             id="1001", status=200, elapsedNs=str(MS), attributes=[{"key": "method", "value": "GET"}]),
        step("HTTP_CALL", 2 * MS, text=f"https://alice:{SECRETS['call URL userinfo']}@api.example/v1/items?page=2",
             id="1002", status=200, elapsedNs=str(MS),
             attributes=[{"key": "url", "value": "http://cdn.example/f.png?X-Amz-Signature="
                                                 f"{SECRETS['attribute holding a URL']}&size=2"}]),
        step("DB_CONNECT", MS, text=f"postgresql://app:{SECRETS['database URL userinfo']}@db:5432/orders"),
        step("MESSAGE", MS, text=f"retrying with session={SECRETS['message']} after a 401"),
        step("END", MS),
    ]
    offset = 0
    for s in steps:
        offset += int(s["gapNs"])
        s["startOffsetNs"] = str(offset)
    return {
        "agent": {"instanceId": "4242424242", "host": "foreign-host", "pid": 77, "program": "foreign-svc",
                  "app": "foreign", "agentVersion": "0.0.1-other", "mode": "http",
                  "commandLine": f"foreign-svc --db-password={SECRETS['command line']} --port 8080"},
        "batchSeq": "1",
        "transactions": [{
            "txid": str(TXID),
            "traceId": base64.b64encode(bytes(range(1, 17))).decode(),
            "name": f"GET /reset?code={SECRETS['transaction name query']}&page=2",
            "kind": "http",
            "startUnixNs": "1760000000000000000",
            "elapsedNs": str(offset),
            "callNs": str(2 * MS),
            "callCount": 2,
            "clientAddr": "127.0.0.1:40000",
            "status": 200,
            "steps": steps,
            "attributes": [{"key": "query", "value": f"password={SECRETS['query attribute']}&next=/home&page=2"},
                           {"key": "token", "value": SECRETS["token attribute"]},
                           {"key": "user_agent", "value": "foreign/1.0"}],
        }],
    }


def masked_count(log_text):
    """`masked values N` (or OFF) of the collector's last status line."""
    lines = [l for l in log_text.splitlines() if "stored in total" in l]
    m = re.search(r"masked values (\d+|OFF)", lines[-1]) if lines else None
    assert m, f"no masked count on the status line: {lines[-1:]}"
    return m.group(1)


class CollectorRedaction(TxrayTestCase):
    def send(self, col):
        path = os.path.join(self.tmp, "foreign-batch.json")
        with open(path, "w") as f:
            json.dump(batch_json(), f)
        subprocess.run([SENDER, "--endpoint", col.endpoint, "--transactions", "0", "--batch-json", path],
                       check=True, capture_output=True, text=True, timeout=60)
        wait_transactions(col.db, 1)

    def outputs(self, db):
        """Everything a reader can get out of the store: {place: text}."""
        out = {}
        for f in glob.glob(db + "*"):  # the file and any -wal / -shm beside it
            with open(f, "rb") as fh:
                out[f"store file {os.path.basename(f)}"] = fh.read().decode("latin-1")
        run = lambda *a: subprocess.run([TXRAY, *a], check=True, capture_output=True, text=True, timeout=120).stdout
        out["show --json"] = run("show", "--db", db, "--json", "--last", "10")
        out["show (text)"] = run("show", "--db", db, "--last", "10")
        for fmt in ("md", "html", "csv", "json"):
            o = os.path.join(self.tmp, f"report.{fmt}")
            run("report", "--db", db, "--format", fmt, "-o", o)
            files = sorted(glob.glob(os.path.join(o, "*"))) if os.path.isdir(o) else [o]  # csv: a folder of tables
            self.assertTrue(files, f"report --format {fmt} wrote nothing")
            out[f"report --format {fmt}"] = "".join(read(f) for f in files)
        return out

    def export(self, db, *args):
        """`txray export` of the store to a fresh receiver: the text of the spans it decoded."""
        rec = Receiver(self, self.tmp, name=f"export{len(args)}")
        try:
            subprocess.run([TXRAY, "export", "--db", db, "--otlp-endpoint", rec.endpoint, *args], check=True,
                           capture_output=True, text=True, timeout=120)
            wait_for(lambda: rec.stats()["spans"] >= 3, timeout=30, what="exported spans")
            with open(rec.out) as f:
                return f.read()
        finally:
            rec.stop()

    def collect(self, *args):
        """The planted batch through a collector that also forwards to a receiver; returns
        (collector, status masked count, {place: text})."""
        rec = Receiver(self, self.tmp, name=f"live{len(args)}")
        col = Collector(self.tmp, db=os.path.join(self.tmp, f"store{len(args)}.db"),
                        extra_args=["--otlp-endpoint", rec.endpoint, *args]).start()
        try:
            self.send(col)
            wait_for(lambda: rec.stats()["spans"] >= 3, timeout=30, what="forwarded spans")
        finally:
            rc = col.stop()
            rec.stop()
        self.assertEqual(rc, 0)
        out = self.outputs(col.db)
        with open(rec.out) as f:
            out["OTLP (collect --otlp-endpoint)"] = f.read()
        out["collector log"] = col.log_text()
        return col, masked_count(col.log_text()), out

    def test_every_planted_secret_is_masked_everywhere(self):
        col, masked, out = self.collect()
        out["OTLP (txray export)"] = self.export(col.db)
        found = {(where, place): text.count(secret) for where, secret in SECRETS.items()
                 for place, text in out.items() if secret in text}
        self.assertEqual(found, {}, "secrets found (planted where, found in): count")
        self.assertEqual(masked, str(len(SECRETS)), "the status line counts every masked value once")
        for place in ("show --json", "OTLP (collect --otlp-endpoint)"):
            for kept in KEPT[:5]:
                self.assertIn(kept, out[place], f"{kept} kept in {place}")
        tx = show_json(col.db, "--last", "1")[0]
        self.assertEqual(tx["name"], "GET /reset?code=?&page=2")
        self.assertEqual(tx["attributes"]["query"], "password=?&next=/home&page=2")
        self.assertEqual(tx["attributes"]["token"], "?")
        self.assertEqual(tx["attributes"]["user_agent"], "foreign/1.0")
        texts = [s.get("text") for s in tx["steps"]]
        self.assertIn("http://backend:8080/stock?api_key=?&user=bob", texts)
        self.assertIn("https://alice:?@api.example/v1/items?page=2", texts)
        self.assertIn("postgresql://app:?@db:5432/orders", texts)
        self.assertIn("retrying with session=? after a 401", texts)
        self.assertIn("masked 9 values that looked like credentials in a batch of app foreign", out["collector log"])
        print(f"\nplanted {len(SECRETS)} secrets; masked values {masked}; searched {len(out)} outputs: "
              f"{', '.join(sorted(out))}")

    def test_no_redact_keeps_them_and_says_so(self):
        # The control: the same searches find every secret when the collector keeps values as sent, so
        # the test above looks where they would be.
        col, masked, out = self.collect("--no-redact")
        self.assertEqual(masked, "OFF")
        self.assertIn("--no-redact: values that look like credentials are stored", out["collector log"])
        store = "".join(t for p, t in out.items() if p.startswith("store file"))
        for where, secret in SECRETS.items():
            self.assertIn(secret, store, f"{where}: kept in the store with --no-redact")
            self.assertIn(secret, out["OTLP (collect --otlp-endpoint)"], f"{where}: forwarded with --no-redact")
        self.assertIn(SECRETS["token attribute"], out["show --json"])
        # A store that holds them (written with --no-redact, or by an older collector) is masked again when
        # exported, unless the export says --no-redact too.
        exported = self.export(col.db)
        self.assertEqual([s for s in SECRETS.values() if s in exported], [])
        self.assertIn(SECRETS["query attribute"], self.export(col.db, "--no-redact"))

    def test_a_user_pattern_replaces_the_default(self):
        col, masked, out = self.collect("--redact-pattern", "^(page|user)$")
        tx = show_json(col.db, "--last", "1")[0]
        self.assertEqual(tx["attributes"]["query"], f"password={SECRETS['query attribute']}&next=/home&page=?")
        self.assertEqual(tx["attributes"]["token"], SECRETS["token attribute"])
        # page= three times (name, query, a call URL), user= once, and the two userinfo passwords (masked by
        # their place in the URL, whatever the pattern).
        self.assertEqual(masked, "6")
        self.assertNotIn(SECRETS["call URL userinfo"], out["show --json"])
        self.assertNotIn(SECRETS["database URL userinfo"], out["show --json"])

    def test_an_empty_or_broken_pattern_is_refused(self):
        for pattern, why in (("", "say --no-redact"), ("(", "not a valid regular expression"),
                             ("token|", "matches the empty name")):
            db = os.path.join(self.tmp, "refused.db")
            r = subprocess.run([TXRAY, "collect", "--listen", f"ipc://{self.tmp}/r.sock", "--db", db,
                                "--redact-pattern", pattern], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(why, r.stderr)
            self.assertFalse(os.path.exists(db), "a refused start creates no store")


if __name__ == "__main__":
    unittest.main()
