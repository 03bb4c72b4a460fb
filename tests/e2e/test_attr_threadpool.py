"""Issue 10, C/C++ thread pools: the thread-pool sample (samples/threadpool: one I/O thread reads every
request, a pool of 8 workers calls the back-end) carries each request's context to its worker with the C
API (txray_context_capture / attach / detach / release). Under 24 concurrent keep-alive connections and
a unique path per request (attribution.py): 0 calls in another request's transaction, >= 99% of
transactions hold exactly their own call, and the unattributed HTTP_CALL steps of the front equal its
missing calls. Without the agent the sample answers the same (the C API is a no-op)."""
import os
import subprocess
import unittest

from attribution import REQUESTS, check_front, drive, start_back
from txraytest import BIN, Collector, TxrayTestCase, agent_env, bare_env, free_port, wait_port, \
    wait_transactions

SAMPLE = os.path.join(BIN, "txray-threadpool")
WORKERS = 8


class ThreadPoolAttribution(TxrayTestCase):
    def start_front(self, env, backend):
        port = free_port()
        p = self.spawn([SAMPLE, "serve", "--listen", f"127.0.0.1:{port}", "--backend", f"127.0.0.1:{backend}",
                        "--workers", str(WORKERS)], env=env, stdout=subprocess.DEVNULL)
        wait_port(port)
        return p, port

    def check_answers(self, answers):
        wrong = {i: a for i, a in answers.items() if a != f"r {i}\nb {i}"}
        self.assertEqual(len(answers), REQUESTS)
        self.assertEqual(wrong, {})

    def test_without_the_agent_every_answer_is_right(self):
        _, backend = start_back(self)
        front, port = self.start_front(bare_env(), backend)
        self.check_answers(drive(port))
        front.terminate()
        self.assertEqual(front.wait(timeout=20), 0)

    def test_every_call_in_its_own_transaction(self):
        _, backend = start_back(self)
        with Collector(self.tmp) as col:
            front, port = self.start_front(agent_env(col.endpoint, app="tp-front"), backend)
            self.check_answers(drive(port))
            wait_transactions(col.db, REQUESTS)
            front.terminate()  # exit: the agent sends what it holds, unattributed steps included
            self.assertEqual(front.wait(timeout=20), 0)
        check_front(self, col.db, "tp-front")


if __name__ == "__main__":
    unittest.main()
