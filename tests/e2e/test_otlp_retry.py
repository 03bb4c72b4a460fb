"""OTLP export against a back-end that refuses for a while (issue 13, must-show 2): the receiver
(tests/e2e/otlp/receiver.js, official OpenTelemetry definitions) answers 503 with Retry-After: 1 for
10 s from its first request, then 200. Agents' batches (txray-test-sender) arrive throughout.
- Within the queue's bound: every transaction arrives, after the refusal, none dropped or failed; the
  status line said REFUSED while it lasted.
- Past the bound (--otlp-queue 300): what did not fit is dropped and counted; delivered + dropped equals
  what was sent, exactly, and the status line and the exit line say so; everything was stored while the
  back-end still refused (export never holds storing back).
The two run side by side (~20 s).
"""
import threading
import time
import unittest

from otlptest import Receiver, otlp_status
from txraytest import Collector, TxrayTestCase, count_transactions, send_batches, wait_for

ROUNDS = 6
PER_ROUND = 200
REFUSE_S = 10


def roots(spans):
    return [s for s in spans if "txray.kind" in s["attributes"]]


class OtlpRetryTest(TxrayTestCase):
    def scenario(self, name, queue, spread_s, results):
        rec = Receiver(self, self.tmp, name, ["--refuse-for", REFUSE_S, "--retry-after", "1"])
        extra = ["--otlp-endpoint", rec.endpoint] + (["--otlp-queue", str(queue)] if queue else [])
        col = Collector(self.tmp, endpoint=f"ipc://{self.tmp}/{name}.sock", db=f"{self.tmp}/{name}.db",
                        extra_args=extra)
        col.log = f"{self.tmp}/{name}-collector.log"
        with col:
            for i in range(ROUNDS):
                send_batches(col.endpoint, "--transactions", PER_ROUND, "--per-batch", 50, "--steps", 6,
                             "--seed", 1000 + i, "--instance-id", 77 + (queue or 0), "--app", name)
                time.sleep(spread_s / ROUNDS)
            wait_for(lambda: count_transactions(col.db) >= ROUNDS * PER_ROUND, timeout=30, what="stored")
            accepted_when_stored = rec.stats()["accepted"]
            # Until the exporter's queue is empty and the receiver took what it will take.
            wait_for(lambda: (otlp_status(col.log_text()) or {}).get("queued", 1) == 0
                     and rec.stats()["accepted"] > 0, timeout=40, what=f"{name}: the export queue drained")
            time.sleep(1.5)  # a last in-flight request
        results[name] = dict(rec=rec, col=col, accepted_when_stored=accepted_when_stored, log=col.log_text(), stats=rec.stats(),
                             spans=rec.spans(), stored=count_transactions(col.db))
        rec.stop()

    def test_refusing_backend(self):
        results, errors = {}, []

        def run(*a):
            try:
                self.scenario(*a)
            except BaseException as e:  # noqa: B036 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=("within", None, 9, results)),
                   threading.Thread(target=run, args=("past", 300, 2, results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        sent = ROUNDS * PER_ROUND

        w = results["within"]
        st = otlp_status(w["log"])
        self.assertEqual(w["stored"], sent)
        self.assertGreaterEqual(w["stats"]["refused"], 5, w["stats"])  # ~10 s of Retry-After: 1
        self.assertEqual(len(roots(w["spans"])), sent, st["line"])
        self.assertEqual({s["span_id"] for s in roots(w["spans"])}.__len__(), sent, "a transaction sent twice")
        self.assertEqual((st["sent_tx"], st["dropped"], st["failed"]), (sent, 0, 0), st["line"])
        self.assertIn("REFUSED for", w["log"], "the status line said the back-end refused")
        self.assertIn("HTTP 503", w["log"])

        p = results["past"]
        st = otlp_status(p["log"])
        self.assertEqual(p["stored"], sent, "the store keeps everything whatever the export drops")
        # Sent in ~2 s, all stored while the back-end still refused (10 s): storing never waits for it.
        self.assertEqual(p["accepted_when_stored"], 0, "stored only after the back-end took spans again")
        delivered = len(roots(p["spans"]))
        self.assertGreater(st["dropped"], 0, st["line"])
        self.assertGreaterEqual(delivered, 300, st["line"])
        self.assertEqual(delivered, st["sent_tx"], st["line"])
        self.assertEqual(delivered + st["dropped"], sent, f"delivered {delivered}: {st['line']}")
        self.assertEqual(st["failed"], 0, st["line"])
        mid = [l for l in p["log"].splitlines() if "REFUSED for" in l and ", dropped 0," not in l]
        self.assertTrue(mid, "a status line during the refusal showed the drops")
        print(f"\nwithin the bound: {sent} sent, {len(roots(w['spans']))} delivered, refused "
              f"{w['stats']['refused']} requests; past it (queue 300): {delivered} delivered, {st['dropped']} dropped")


if __name__ == "__main__":
    unittest.main()
