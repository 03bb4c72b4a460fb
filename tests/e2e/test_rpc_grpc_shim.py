"""A gRPC server's own outbound calls as rows of the request that made them (issue 16; the Python grpcio
shim agent/runtimes/python/_txray_grpc.py and the agent's span table, agent/core/span_owner.*).

A back and a front server (grpcio, thread pools of 32) under the agent with the Python shim on
PYTHONPATH; a client (process mode, so it sends a traceparent) makes 24 concurrent calls to the front
over ONE channel — one HTTP/2 connection —, each to its own method /t.Front/P_<k>. The front's handler
for k calls the back's method /t.Back/<kind>_<k> on one shared channel, a different multi-callable kind
for each k % 5 (unary __call__, with_call, future, unary-stream, stream-unary); the back sleeps 300 ms,
so all of them are in flight at once and grpc's C core writes HEADERS from whichever thread holds the
transport. Checked, per front transaction: exactly one GRPC_CALL row, the one for its own k (its text
names k, and its callee is the back transaction named by k, whose parent span is the row's span id and
whose trace is the front's); no call row in the front's container; GAP/CPU sums exact.
The same with grpc.aio on both sides (coroutine and async-generator handlers; 20 calls).
With TXRAY_RUNTIME_HINTS=0 (the shim loaded but silent) the old rule holds: no row in any front
transaction, every call unattributed and linked to its callee.
"""
import os
import subprocess
import textwrap

from grpctest import grpc_rows, serve_grpc, unattributed_calls
from txraytest import (AGENT, PYTHON, Collector, TxrayTestCase, agent_env, check_sums, show_json, wait_for,
                       wait_transactions)

SHIMS = os.path.join(os.path.dirname(AGENT), "txray", "runtimes", "python")
N = 24
KINDS = ["U", "W", "F", "S", "C"]  # per k % 5: __call__, with_call, future, unary-stream, stream-unary

SERVERS = textwrap.dedent(r"""
    import concurrent.futures, signal, sys, time, grpc
    ident = lambda b: b
    role = sys.argv[1]
    KINDS = "UWFSC"

    def back_unary(request, context):
        time.sleep(0.3)
        return b"ok " + request

    def back_stream(request, context):
        time.sleep(0.3)
        yield b"one"
        yield b"two"

    def back_client_stream(it, context):
        n = sum(1 for _ in it)
        time.sleep(0.3)
        return b"got %d" % n

    class Back(grpc.GenericRpcHandler):
        def service(self, details):
            kind = details.method.rsplit("/", 1)[1][:1]
            if kind == "S":
                return grpc.unary_stream_rpc_method_handler(back_stream, ident, ident)
            if kind == "C":
                return grpc.stream_unary_rpc_method_handler(back_client_stream, ident, ident)
            return grpc.unary_unary_rpc_method_handler(back_unary, ident, ident)

    class Front(grpc.GenericRpcHandler):
        def __init__(self, target):
            self.ch = grpc.insecure_channel(target)

        def page(self, request, context, k):
            kind = KINDS[k % 5]
            method = "/t.Back/%s_%d" % (kind, k)
            if kind == "U":
                return self.ch.unary_unary(method, ident, ident)(request, timeout=20)
            if kind == "W":
                return self.ch.unary_unary(method, ident, ident).with_call(request, timeout=20)[0]
            if kind == "F":
                return self.ch.unary_unary(method, ident, ident).future(request, timeout=20).result()
            if kind == "S":
                return b",".join(self.ch.unary_stream(method, ident, ident)(request, timeout=20))
            return self.ch.stream_unary(method, ident, ident)(iter([b"a", b"b", b"c"]), timeout=20)

        def service(self, details):
            k = int(details.method.rsplit("_", 1)[1])
            return grpc.unary_unary_rpc_method_handler(lambda r, c: self.page(r, c, k), ident, ident)

    def stop(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=32), options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((Back() if role == "back" else Front(sys.argv[2]),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("%s listening on grpc port %d" % (role, port), flush=True)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        pass
    server.stop(1).wait()
""")

AIO_SERVERS = textwrap.dedent(r"""
    import asyncio, signal, sys, grpc
    ident = lambda b: b
    role = sys.argv[1]

    async def back_unary(request, context):
        await asyncio.sleep(0.3)
        return b"ok " + request

    async def back_stream(request, context):
        await asyncio.sleep(0.3)
        yield b"one"
        yield b"two"

    class Back(grpc.GenericRpcHandler):
        def service(self, details):
            if details.method.rsplit("/", 1)[1].startswith("S"):
                return grpc.unary_stream_rpc_method_handler(back_stream, ident, ident)
            return grpc.unary_unary_rpc_method_handler(back_unary, ident, ident)

    class Front(grpc.GenericRpcHandler):
        def __init__(self, target):
            self.target = target
            self.ch = None

        def service(self, details):
            k = int(details.method.rsplit("_", 1)[1])

            async def page(request, context):
                if self.ch is None:
                    self.ch = grpc.aio.insecure_channel(self.target)
                if k % 2:
                    parts = [m async for m in self.ch.unary_stream("/t.Back/S_%d" % k, ident, ident)(request, timeout=20)]
                    return b",".join(parts)
                return await self.ch.unary_unary("/t.Back/U_%d" % k, ident, ident)(request, timeout=20)
            return grpc.unary_unary_rpc_method_handler(page, ident, ident)

    async def main():
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        server.add_generic_rpc_handlers((Back() if role == "back" else Front(sys.argv[2]),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print("%s listening on grpc port %d" % (role, port), flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await server.stop(1)
    asyncio.run(main())
""")

CLIENT = textwrap.dedent(r"""
    import sys, threading, grpc
    ident = lambda b: b
    ch = grpc.insecure_channel(sys.argv[1])
    grpc.channel_ready_future(ch).result(timeout=20)
    n = int(sys.argv[2])
    out = [None] * n
    barrier = threading.Barrier(n)
    def one(k):
        call = ch.unary_unary("/t.Front/P_%d" % k, ident, ident)
        barrier.wait()
        out[k] = call(b"r%d" % k, timeout=30)
    ts = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in ts: t.start()
    for t in ts: t.join()
    print(sum(1 for o in out if o))
""")


class GrpcShimTest(TxrayTestCase):
    def serve(self, role, env, *args, script=SERVERS):
        return serve_grpc(self, role, [PYTHON, "-c", script, role, *args], env)

    def run_pair(self, col, hints, n, script=SERVERS):
        shim = {"PYTHONPATH": SHIMS, "TXRAY_RUNTIME_HINTS": "1" if hints else "0"}
        back, bport = self.serve("back", agent_env(col.endpoint, app="back", extra=shim), script=script)
        front, fport = self.serve("front", agent_env(col.endpoint, app="front", extra=shim), f"127.0.0.1:{bport}",
                                  script=script)
        r = subprocess.run([PYTHON, "-c", CLIENT, f"127.0.0.1:{fport}", str(n)],
                           env=agent_env(col.endpoint, app="client", mode="process"),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.stdout.strip(), str(n), r.stderr)
        wait_transactions(col.db, 2 * n + 1)
        if not hints:
            wait_for(lambda: unattributed_calls(col.db, "front")[0] >= n, 20, what="the front's unattributed calls")
        for p in (front, back):
            p.terminate()
            p.wait(10)
        txs = show_json(col.db, "--last", "1000")
        by_app = {}
        for t in txs:
            by_app.setdefault(t["app"], []).append(t)
        return by_app, {t["txid"]: t for t in txs}

    def test_calls_filed_under_their_request(self):
        with Collector(self.tmp) as col:
            by_app, by_txid = self.run_pair(col, True, N)
            fronts = by_app["front"]
            self.assertEqual(sorted(t["name"] for t in fronts), sorted(f"POST /t.Front/P_{k}" for k in range(N)))
            # The client's calls: one connection, every row linked to its front transaction, >= 20 at once.
            client = by_app["client"][0]
            rows = grpc_rows(client)
            self.assertEqual(len(rows), N)
            self.assertEqual({r["callee_txid"] for r in rows}, {t["txid"] for t in fronts})
            events = sorted([(r["start_offset_ns"], 1) for r in rows] +
                            [(r["start_offset_ns"] + r["elapsed_ns"], -1) for r in rows])
            live = peak = 0
            for _, d in events:
                live += d
                peak = max(peak, live)
            self.assertGreaterEqual(peak, 20, "fewer than 20 front requests in flight at once")
            for t in fronts:
                k = int(t["name"].rsplit("_", 1)[1])
                own = grpc_rows(t)
                self.assertEqual(len(own), 1, f"{t['name']}: {[r['text'] for r in own]}")
                row = own[0]
                self.assertEqual(row["attributes"]["rpc"], "grpc")
                self.assertTrue(row["text"].endswith(f"/t.Back/{KINDS[k % 5]}_{k}"),
                                f"{t['name']} holds another request's call: {row['text']}")
                self.assertEqual(row["error"], "")
                self.assertIn("callee_txid", row, f"row not linked: {row}")
                callee = by_txid[row["callee_txid"]]
                self.assertEqual(callee["app"], "back")
                self.assertEqual(callee["name"], f"POST /t.Back/{KINDS[k % 5]}_{k}")
                self.assertEqual(callee["parent_span_id"], row["span_id"])
                self.assertEqual(callee["trace_id"], t["trace_id"])
                self.assertEqual(t["trace_id"], client["trace_id"])
                self.assertGreater(row["bytes_written"], 0)
                self.assertGreater(row["bytes_read"], 0)
                check_sums(self, t)
            self.assertEqual(len(by_app["back"]), N)
            # Nothing left for the front's container (sent about once a second when it holds rows).
            self.assertEqual(unattributed_calls(col.db, "front"), (0, 0))

    def test_aio_calls_filed_under_their_request(self):
        # grpc.aio on both sides: coroutine handlers, calls written from the event loop.
        n = 20
        with Collector(self.tmp) as col:
            by_app, by_txid = self.run_pair(col, True, n, script=AIO_SERVERS)
            fronts = by_app["front"]
            self.assertEqual(len(fronts), n)
            for t in fronts:
                k = int(t["name"].rsplit("_", 1)[1])
                own = grpc_rows(t)
                self.assertEqual(len(own), 1, f"{t['name']}: {[r['text'] for r in own]}")
                method = f"/t.Back/{'S' if k % 2 else 'U'}_{k}"
                self.assertTrue(own[0]["text"].endswith(method), f"{t['name']} holds {own[0]['text']}")
                callee = by_txid[own[0]["callee_txid"]]
                self.assertEqual(callee["name"], "POST " + method)
                self.assertEqual(callee["parent_span_id"], own[0]["span_id"])
                self.assertEqual(callee["trace_id"], t["trace_id"])
                check_sums(self, t)
            self.assertEqual(unattributed_calls(col.db, "front"), (0, 0))

    def test_without_hints_calls_stay_unattributed(self):
        n = 8
        with Collector(self.tmp) as col:
            by_app, by_txid = self.run_pair(col, False, n)
            fronts = by_app["front"]
            self.assertEqual(len(fronts), n)
            for t in fronts:
                self.assertEqual(grpc_rows(t), [], f"{t['name']} got a call the agent cannot place")
                check_sums(self, t)
            self.assertEqual(unattributed_calls(col.db, "front"), (n, n))


if __name__ == "__main__":
    import unittest
    unittest.main()
