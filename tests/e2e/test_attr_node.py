"""Attribution in a Node.js front (issue 10): an http server on one event-loop thread calling a threaded
back-end once per request, under `txray run` (so with agent/runtimes/node preloaded through NODE_OPTIONS),
24 keep-alive clients at once, a unique id per request. Every call is in its own request's transaction or
unattributed, never in another's; >= 99% exact; unattributed calls = missing calls (attribution.py)."""
import os
import shutil
import unittest

from attribution import ATTR, run_front
from txraytest import AGENT, TxrayTestCase

NODE = shutil.which("node") or "/usr/bin/node"
SHIM = os.path.join(os.path.dirname(AGENT), "txray", "runtimes", "node", "txray-hints.js")


@unittest.skipUnless(os.path.exists(AGENT) and os.path.exists(NODE), "needs the agent and node")
class NodeAttribution(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.assertTrue(os.path.exists(SHIM), f"the node shim is not staged at {SHIM}")

    def test_http_agent_keepalive_pool(self):
        """http.get through http.Agent({keepAlive: true, maxSockets: 8}): requests queue for the 8 sockets
        and are written from the callbacks of other requests' responses."""
        run_front(self, "node-agent", [NODE, os.path.join(ATTR, "node_front.js"), "{port}", "{back}", "agent"])

    def test_global_fetch(self):
        """The global fetch (undici and its own keep-alive pool)."""
        run_front(self, "node-fetch", [NODE, os.path.join(ATTR, "node_front.js"), "{port}", "{back}", "fetch"])

    def front_log(self):
        with open(os.path.join(self.tmp, "front.log")) as f:
            return f.read()

    def test_calls_made_in_the_handler(self):
        """Calls made synchronously in their handlers are found from the handler's own async resource; after
        256 of them and none made later, the shim stops AsyncLocalStorage's propagation (its main cost)."""
        run_front(self, "node-sync", [NODE, os.path.join(ATTR, "node_front.js"), "{port}", "{back}", "agent", "sync"])
        self.assertIn("propagating false", self.front_log())

    def test_propagation_comes_back_for_good(self):
        """Calls in handlers first (propagation stops), then after a timer: the first such call starts it
        again for good. Calls of the requests started while it was off are unattributed, never wrong."""
        from attribution import CONNECTIONS
        run_front(self, "node-mixed", [NODE, os.path.join(ATTR, "node_front.js"), "{port}", "{back}", "agent", "mixed"],
                  exact_share=1.0 - 3.0 * CONNECTIONS / 480)
        self.assertIn("propagating true", self.front_log())

    def test_without_the_shim_never_wrong(self):
        """TXRAY_RUNTIME_HINTS=0: the agent's native rules alone. Calls a pool writes from another request's
        callback, or a timer, are unattributed, never in another request's transaction."""
        run_front(self, "node-noshim", [NODE, os.path.join(ATTR, "node_front.js"), "{port}", "{back}", "agent"],
                  shim=False)


if __name__ == "__main__":
    unittest.main()
