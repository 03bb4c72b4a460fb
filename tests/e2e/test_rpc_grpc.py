"""HTTP/2 and gRPC (issue 16): the gRPC pair of samples/grpc_pair (Python grpcio, h2c) under the agent.

A client (process mode) drives the back service over ONE channel — one HTTP/2 connection — with 24
concurrent slow unary calls (400 ms each, so that they are all in flight at once), 3 server-streaming
calls, a call that fails with INTERNAL and one that fails with NOT_FOUND; then a second client calls
the front service, which calls the back once per request. Checked:
  - the client's answers are the same with and without the agent (the traceparent fields the agent puts
    into HEADERS frames change nothing the programs see);
  - one back transaction per stream, named by the full gRPC method, kind grpc, with grpc_status;
  - the client's calls share one connection (one SOCKET row) and at least 20 of them overlap;
  - every client row is a gRPC call (rpc=grpc, text grpc://…/demo.Back/…) linked to its callee: the
    callee's parent span is the row's span id and both are in one trace;
  - the failing methods show their grpc-status: 13 INTERNAL "back is broken" and 5 NOT_FOUND, in the
    rows, the back's transactions and `txray show`'s text (GRPC_CALL … grpc-status 13);
  - the front's transactions are callees of the second client's rows, and the front's own calls to the
    back (made on grpcio's worker threads, where the agent cannot tell which stream they serve) are
    unattributed — never put into a front transaction — yet linked to their back transactions.
Over TLS (ALPN h2; grpcio's OpenSSL sees the plaintext in SSL_read/SSL_write): the back's streams are
transactions and the client's calls gRPC rows with their grpc-status, each linked to its callee (the
traceparent field goes into the HEADERS frames through the SSL_write hook).
"""
import os
import subprocess
import textwrap
import unittest

from grpctest import grpc_rows, serve_grpc, unattributed_calls
from txraytest import (PYTHON, SOURCE_DIR, Collector, TxrayTestCase, agent_env, bare_env, show_json, show_text,
                       wait_for, wait_transactions)

PAIR = os.path.join(SOURCE_DIR, "samples", "grpc_pair", "grpc_pair.py")
CONCURRENT = 24
STREAMS = 3

CLIENT = r"""
import sys, threading, grpc
ident = lambda b: b
ch = grpc.insecure_channel(sys.argv[1])
grpc.channel_ready_future(ch).result(timeout=20)
get = ch.unary_unary("/demo.Back/Get", request_serializer=ident, response_deserializer=ident)
lst = ch.unary_stream("/demo.Back/List", request_serializer=ident, response_deserializer=ident)
fail = ch.unary_unary("/demo.Back/Fail", request_serializer=ident, response_deserializer=ident)
out = {}
def one(i):
    out["get%02d" % i] = get(b"slow-%d" % i, timeout=60).decode()
threads = [threading.Thread(target=one, args=(i,)) for i in range(%(n)d)]
for t in threads: t.start()
for t in threads: t.join()
for i in range(%(s)d):
    out["list%d" % i] = [m.decode() for m in lst(b"5", timeout=60)]
for name, call, arg in (("fail", fail, b"x"), ("missing", get, b"missing")):
    try:
        call(arg, timeout=60)
        out[name] = "no error"
    except grpc.RpcError as e:
        out[name] = "%%s %%s" %% (e.code().name, e.details())
ch.close()
print(repr(sorted(out.items())))
""".replace("%(n)d", str(CONCURRENT)).replace("%(s)d", str(STREAMS)).replace("%%", "%")


class GrpcTest(TxrayTestCase):
    def serve(self, role, env, *args):
        return serve_grpc(self, role, [PYTHON, PAIR, role, *args], env)

    def client(self, env, target):
        r = subprocess.run([PYTHON, "-c", CLIENT, target], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_grpc_streams_calls_and_links(self):
        # Baseline without the agent.
        back, bport = self.serve("back", bare_env())
        bare = self.client(bare_env(), f"127.0.0.1:{bport}")
        back.terminate()
        back.wait(10)
        self.assertIn("item slow-0", bare)
        self.assertIn("INTERNAL back is broken", bare)

        with Collector(self.tmp) as col:
            back, bport = self.serve("back", agent_env(col.endpoint, app="back"))
            front, fport = self.serve("front", agent_env(col.endpoint, app="front"), "--back", f"127.0.0.1:{bport}")
            traced = self.client(agent_env(col.endpoint, app="client", mode="process"), f"127.0.0.1:{bport}")
            page = subprocess.run([PYTHON, PAIR, "client", "--target", f"127.0.0.1:{fport}", "--requests", "5"],
                                  env=agent_env(col.endpoint, app="client2", mode="process"),
                                  capture_output=True, text=True, timeout=120)
            self.assertIn("ok 5 failed 0", page.stdout, page.stderr)
            n_back = CONCURRENT + STREAMS + 2 + 5
            wait_transactions(col.db, n_back + 5 + 2)
            # The front's unattributed steps come in its container, sent about once a second.
            wait_for(lambda: unattributed_calls(col.db, "front")[0] >= 5, 20, what="the front's unattributed calls")
            for p in (front, back):
                p.terminate()
                p.wait(10)
        self.assertEqual(traced, bare, "the client's answers differ with the agent")

        txs = show_json(col.db, "--last", "1000")
        by_app = {}
        for t in txs:
            by_app.setdefault(t["app"], []).append(t)
        by_txid = {t["txid"]: t for t in txs}

        # One back transaction per stream, named by the full method.
        back_txs = by_app["back"]
        names = sorted(t["name"] for t in back_txs)
        self.assertEqual(names.count("POST /demo.Back/Get"), CONCURRENT + 1 + 5, names)
        self.assertEqual(names.count("POST /demo.Back/List"), STREAMS)
        self.assertEqual(names.count("POST /demo.Back/Fail"), 1)
        for t in back_txs:
            self.assertEqual(t["kind"], "grpc")
            self.assertEqual(t["status"], 200)
            self.assertIn(t["attributes"].get("grpc_status"), ("0", "5", "13"))
        lists = [t for t in back_txs if t["name"].endswith("/List")]
        gets = [t for t in back_txs if t["name"].endswith("/Get") and t["error"] == ""]
        self.assertTrue(gets)
        # five DATA frames of "row i" (9-byte frame header, 5-byte gRPC prefix, 5 bytes) at least
        self.assertGreaterEqual(min(t["bytes_written"] for t in lists), 5 * (9 + 5 + 5))
        failed = [t for t in back_txs if t["name"].endswith("/Fail")][0]
        self.assertEqual(failed["error"], "grpc-status 13 INTERNAL: back is broken")
        missing = [t for t in back_txs if t["attributes"].get("grpc_status") == "5"]
        self.assertEqual(len(missing), 1)
        self.assertEqual(missing[0]["error"], "grpc-status 5 NOT_FOUND: no item missing")

        # The client: one connection, every stream a gRPC row linked to its callee.
        client = by_app["client"][0]
        sockets = [s for s in client["steps"] if s["kind"] == "SOCKET" and s["attributes"].get("port") == str(bport)]
        self.assertEqual(len(sockets), 1, "the client's calls should share one HTTP/2 connection")
        rows = grpc_rows(client)
        self.assertEqual(len(rows), CONCURRENT + STREAMS + 2)
        for r in rows:
            self.assertEqual(r["attributes"]["rpc"], "grpc")
            self.assertEqual(r["attributes"]["protocol"], "h2")
            self.assertIn("ttfb_us", r["attributes"])
            self.assertTrue(r["text"].startswith(f"grpc://127.0.0.1:{bport}/demo.Back/"), r["text"])
            self.assertGreater(r["bytes_written"], 0)
            self.assertGreater(r["bytes_read"], 0)
            self.assertIn("callee_txid", r, f"row not linked: {r}")
            callee = by_txid[r["callee_txid"]]
            self.assertEqual(callee["app"], "back")
            self.assertEqual(callee["name"], "POST " + r["text"].split(str(bport), 1)[1])
            self.assertEqual(callee["parent_span_id"], r["span_id"])
            self.assertEqual(callee["trace_id"], client["trace_id"])
        self.assertEqual(len({r["callee_txid"] for r in rows}), len(rows), "two rows linked to one callee")
        # The slow calls are the Get rows without an error (the other Get, key "missing", fails at once): the
        # back sleeps 400 ms in each before it answers, so each row (from the client's write of the HEADERS
        # to its read of the answer) and its callee's transaction (from the back's read of the request to
        # its answer) enclose the sleep: at least 400 ms whatever the machine's load. Selected by what the
        # test set up, not by wall time (a bound of 300 ms of wall time also takes the "missing" call, 2 ms
        # of the back's time, when a loaded machine stretches it).
        slow = [r for r in rows if r["text"].endswith("/Get") and not r["error"]]
        self.assertEqual(len(slow), CONCURRENT, sorted((r["elapsed_ns"] // 1000000, r.get("error")) for r in rows))
        # Failed under load (1 run in 3 with `yes` x 3) until the agent stopped nesting a thread's concurrent
        # stream rows: a row of 211 ms whose own ttfb_us was 404,608, its parent another Get row (the first
        # stream to end closed the rows opened after it on that thread: rows::add_unnested now).
        for r in rows:
            self.assertNotIn(r["parent"], {s["no"] for s in rows}, "a stream's row nested in another's")
        for r in slow:
            self.assertGreaterEqual(r["elapsed_ns"], 400e6, r)
            self.assertGreaterEqual(by_txid[r["callee_txid"]]["elapsed_ns"], 400e6, r)
        events = sorted([(r["start_offset_ns"], 1) for r in slow] +
                        [(r["start_offset_ns"] + r["elapsed_ns"], -1) for r in slow])
        live = peak = 0
        for _, d in events:
            live += d
            peak = max(peak, live)
        self.assertGreaterEqual(peak, 20, "fewer than 20 streams in flight at once")
        errors = sorted(r["error"] for r in rows if r["error"])
        self.assertEqual(errors, ["grpc-status 13 INTERNAL: back is broken", "grpc-status 5 NOT_FOUND: no item missing"])
        text = show_text(col.db, "--id", client["txid"])
        self.assertRegex(text, r"GRPC_CALL grpc://127\.0\.0\.1:\d+/demo\.Back/Fail grpc-status 13 .*"
                               r"!! ERROR: grpc-status 13 INTERNAL: back is broken")

        # The front: its transactions are the second client's callees; its own calls are unattributed
        # (never in a front transaction) and linked to the back.
        client2 = by_app["client2"][0]
        fronts = by_app["front"]
        self.assertEqual(len(fronts), 5)
        self.assertEqual({r["callee_txid"] for r in grpc_rows(client2)}, {t["txid"] for t in fronts})
        for t in fronts:
            self.assertEqual(t["name"], "POST /demo.Front/Page")
            self.assertEqual(grpc_rows(t), [], "a front transaction got a call the agent cannot place")
        self.assertEqual(unattributed_calls(col.db, "front"), (5, 5))


    def test_grpc_over_tls(self):
        cert, key = os.path.join(self.tmp, "cert.pem"), os.path.join(self.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
        with Collector(self.tmp) as col:
            back, port = self.serve("back", agent_env(col.endpoint, app="tls-back"), "--tls", cert, key)
            for method, n in (("/demo.Back/Get", 6), ("/demo.Back/Fail", 1)):
                r = subprocess.run([PYTHON, PAIR, "client", "--target", f"127.0.0.1:{port}", "--tls-ca", cert,
                                    "--method", method, "--requests", str(n), "--concurrency", str(n)],
                                   env=agent_env(col.endpoint, app="tls-client", mode="process"),
                                   capture_output=True, text=True, timeout=120)
                self.assertIn(f"ok {n if n > 1 else 0} failed {0 if n > 1 else 1}", r.stdout, r.stderr)
            try:
                wait_transactions(col.db, 7 + 2)
            except AssertionError:
                print(show_text(col.db, "--last", "20"), flush=True)
                raise
            back.terminate()
            back.wait(10)
        txs = show_json(col.db, "--last", "100")
        back_txs = [t for t in txs if t["app"] == "tls-back"]
        self.assertEqual(sorted(t["name"] for t in back_txs), ["POST /demo.Back/Fail"] + ["POST /demo.Back/Get"] * 6)
        self.assertEqual([t["error"] for t in back_txs if t["name"].endswith("Fail")],
                         ["grpc-status 13 INTERNAL: back is broken"])
        by_txid = {t["txid"]: t for t in txs}
        clients = [t for t in txs if t["app"] == "tls-client"]
        rows = [r for t in clients for r in grpc_rows(t)]
        self.assertEqual(len(rows), 7)
        for t in clients:
            for r in grpc_rows(t):
                self.assertEqual(r["attributes"]["rpc"], "grpc")
                self.assertTrue(r["text"].startswith(f"grpc://127.0.0.1:{port}/demo.Back/"), r["text"])
                # traceparent went in through SSL_write: every row linked to its callee
                self.assertIn("callee_txid", r, f"row not linked: {r}")
                callee = by_txid[r["callee_txid"]]
                self.assertEqual(callee["app"], "tls-back")
                self.assertEqual(callee["name"], "POST " + r["text"].split(str(port), 1)[1])
                self.assertEqual(callee["parent_span_id"], r["span_id"])
                self.assertEqual(callee["trace_id"], t["trace_id"])
        self.assertEqual(len({r["callee_txid"] for r in rows}), 7, "two rows linked to one callee")
        self.assertEqual(sorted(r["attributes"]["grpc_status"] for r in rows), ["0"] * 6 + ["13"])

    def test_calls_never_filed_under_the_writing_thread(self):
        # Each thread inside a C API transaction of its own makes calls to its own method on ONE shared
        # channel. gRPC's C core writes a stream's HEADERS from whichever thread holds the transport's
        # lock — often another caller's (measured: up to 37 of 1,280 calls in the wrong transaction when
        # rows followed the writing thread). No row may land in a thread's transaction: all go to the
        # unattributed container, each still linked to its callee.
        threads, calls = 16, 20
        script = textwrap.dedent("""
            import ctypes, sys, threading, grpc
            lib = ctypes.CDLL(None)
            lib.txray_agent_begin.argtypes = [ctypes.c_char_p]
            lib.txray_agent_end.argtypes = [ctypes.c_int, ctypes.c_char_p]
            ident = lambda b: b
            ch = grpc.insecure_channel(sys.argv[1])
            grpc.channel_ready_future(ch).result(timeout=20)
            n, k = int(sys.argv[2]), int(sys.argv[3])
            barrier = threading.Barrier(n)
            def work(i):
                get = ch.unary_unary("/demo.Back/Get", request_serializer=ident, response_deserializer=ident)
                barrier.wait()
                assert lib.txray_agent_begin(b"thread %d" % i) == 1
                for j in range(k):
                    get(b"t%d-%d" % (i, j), timeout=30)
                lib.txray_agent_end(0, None)
            ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
            for t in ts: t.start()
            for t in ts: t.join()
            print("done")
        """)
        with Collector(self.tmp) as col:
            back, bport = self.serve("back", agent_env(col.endpoint, app="back"))
            r = subprocess.run([PYTHON, "-c", script, f"127.0.0.1:{bport}", str(threads), str(calls)],
                               env=agent_env(col.endpoint, app="callers"), capture_output=True, text=True, timeout=120)
            self.assertEqual(r.stdout.strip(), "done", r.stderr)
            wait_transactions(col.db, threads * calls + threads)
            wait_for(lambda: unattributed_calls(col.db, "callers")[0] >= threads * calls, 20,
                     what="the callers' unattributed calls")
            back.terminate()
            back.wait(10)
        txs = show_json(col.db, "--last", "1000")
        api = [t for t in txs if t["app"] == "callers" and t["kind"] == "api"]
        self.assertEqual(len(api), threads)
        for t in api:
            self.assertEqual(grpc_rows(t), [], f"{t['name']} got a call the agent cannot place")
        self.assertEqual(unattributed_calls(col.db, "callers"), (threads * calls, threads * calls))


if __name__ == "__main__":
    unittest.main()
