"""Attribution in Python asyncio fronts (issue 10), under `txray run` (so with agent/runtimes/python first
on PYTHONPATH), 24 keep-alive clients at once, a unique id per request, each request calling a threaded
back-end once over a new connection (asyncio.open_connection): every call (and SQL statement) is in its own
request's transaction or unattributed, never in another's; >= 99% exact; unattributed = missing
(attribution.py)."""
import os
import unittest

from attribution import ATTR, run_front
from txraytest import AGENT, PYTHON, TxrayTestCase

SHIM = os.path.join(os.path.dirname(AGENT), "txray", "runtimes", "python", "sitecustomize.py")
FRONT = os.path.join(ATTR, "asyncio_front.py")


@unittest.skipUnless(os.path.exists(AGENT), "the agent library is not built")
class AsyncioAttribution(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.assertTrue(os.path.exists(SHIM), f"the python shim is not staged at {SHIM}")

    def test_streams_server(self):
        """asyncio.start_server, one task per keep-alive connection."""
        run_front(self, "aio-streams", [PYTHON, FRONT, "{port}", "{back}", "streams"])

    def test_run_in_executor_sqlite(self):
        """A sqlite3 query per request in loop.run_in_executor (a worker thread), then the call: the SQL row
        whose text carries the id is the request's too."""
        run_front(self, "aio-executor", [PYTHON, FRONT, "{port}", "{back}", "executor"], sql=True)

    def test_protocol_server(self):
        """loop.create_server with a Protocol starting a task per request from data_received."""
        run_front(self, "aio-protocol", [PYTHON, FRONT, "{port}", "{back}", "protocol"])

    def test_loop_socket_calls(self):
        """The call made with loop.sock_connect / sock_sendall / sock_recv on a plain socket."""
        run_front(self, "aio-sockets", [PYTHON, FRONT, "{port}", "{back}", "sockets"])

    def test_without_the_shim_never_wrong(self):
        """TXRAY_RUNTIME_HINTS=0: the agent's native rules alone; calls and SQL it cannot place are
        unattributed, never in another request's transaction."""
        run_front(self, "aio-noshim", [PYTHON, FRONT, "{port}", "{back}", "executor"], sql=True,
                  shim=False)


if __name__ == "__main__":
    unittest.main()
