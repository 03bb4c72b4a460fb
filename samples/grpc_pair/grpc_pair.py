#!/usr/bin/env python3
"""A gRPC pair for txray (Debian's python3-grpcio): a back service, a front service that calls the
back once per request, and a client that drives either.

    grpc_pair.py back   [--listen 127.0.0.1:0] [--tls CERT KEY]
    grpc_pair.py front  [--listen 127.0.0.1:0] --back HOST:PORT
    grpc_pair.py client --target HOST:PORT [--method M] [--requests N] [--concurrency C] [--seconds S]
                        [--tls-ca CERT] [--traceparent]

Services (full method names as they appear on the wire and in txray):
    /demo.Back/Get      unary: "item <key>" (2 ms; 400 ms for keys "slow-…"; key "missing" fails with NOT_FOUND)
    /demo.Back/Fail     unary: always fails with INTERNAL "back is broken"
    /demo.Back/List     server streaming: N messages "row <i>"
    /demo.Front/Page    unary: calls /demo.Back/Get, answers "page(<back's answer>)"

Messages are plain UTF-8 bytes (grpc's generic handlers with identity serializers), so the sample needs no
generated stubs; on the wire it is ordinary gRPC over HTTP/2 (h2c, one channel = one connection; with
--tls / --tls-ca, HTTP/2 over TLS with ALPN h2).
Each server prints "<role> listening on grpc port N" once it serves. `client --traceparent` sends each call
with a W3C traceparent of its own (a new trace per call), as an instrumented caller would: a front under
txray with its Python shim then files its call to the back under the request that made it
(docs/http2.md, "Which request a call belongs to").
"""
import argparse
import concurrent.futures
import os
import signal
import sys
import threading
import time

import grpc


def _ident(b):
    return b


class Back:
    def get(self, request, context):
        key = request.decode()
        # "slow-<anything>" takes 400 ms (tests keep many streams in flight at once with it)
        time.sleep(0.4 if key.startswith("slow-") else 0.002)
        if key == "missing":
            context.abort(grpc.StatusCode.NOT_FOUND, "no item %s" % key)
        return ("item %s" % key).encode()

    def fail(self, request, context):
        context.abort(grpc.StatusCode.INTERNAL, "back is broken")

    def list(self, request, context):
        n = int(request.decode() or "3")
        for i in range(n):
            yield ("row %d" % i).encode()

    def handler(self):
        return grpc.method_handlers_generic_handler("demo.Back", {
            "Get": grpc.unary_unary_rpc_method_handler(self.get, _ident, _ident),
            "Fail": grpc.unary_unary_rpc_method_handler(self.fail, _ident, _ident),
            "List": grpc.unary_stream_rpc_method_handler(self.list, _ident, _ident),
        })


class Front:
    def __init__(self, back):
        self.channel = grpc.insecure_channel(back)
        self.get = self.channel.unary_unary("/demo.Back/Get", request_serializer=_ident, response_deserializer=_ident)

    def page(self, request, context):
        answer = self.get(request, timeout=10)
        return b"page(" + answer + b")"

    def handler(self):
        return grpc.method_handlers_generic_handler("demo.Front", {
            "Page": grpc.unary_unary_rpc_method_handler(self.page, _ident, _ident),
        })


def _stop(signum, frame):
    raise KeyboardInterrupt  # SIGTERM ends the server through its normal exit path (the agent flushes)


def serve(role, listen, handler, tls=None):
    signal.signal(signal.SIGTERM, _stop)
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=32),
                         options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((handler,))
    if tls:
        with open(tls[0], "rb") as c, open(tls[1], "rb") as k:
            port = server.add_secure_port(listen, grpc.ssl_server_credentials([(k.read(), c.read())]))
    else:
        port = server.add_insecure_port(listen)
    server.start()
    print("%s listening on grpc port %d" % (role, port), flush=True)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        pass
    server.stop(1).wait()


def client(args):
    if args.tls_ca:
        with open(args.tls_ca, "rb") as f:
            channel = grpc.secure_channel(args.target, grpc.ssl_channel_credentials(f.read()))
    else:
        channel = grpc.insecure_channel(args.target)
    grpc.channel_ready_future(channel).result(timeout=10)
    method = args.method
    streaming = method.endswith("/List")
    if streaming:
        call = channel.unary_stream(method, request_serializer=_ident, response_deserializer=_ident)
    else:
        call = channel.unary_unary(method, request_serializer=_ident, response_deserializer=_ident)
    ok = failed = 0
    lock = threading.Lock()

    def one(i):
        nonlocal ok, failed
        payload = (args.payload or str(i)).encode()
        md = None
        if args.traceparent:
            md = (("traceparent", "00-%s-%s-01" % (os.urandom(16).hex(), os.urandom(8).hex())),)
        try:
            if streaming:
                n = sum(1 for _ in call(payload, timeout=20, metadata=md))
                assert n >= 0
            else:
                call(payload, timeout=20, metadata=md)
            with lock:
                ok += 1
        except grpc.RpcError as e:
            with lock:
                failed += 1
            if args.verbose:
                print("call %d: %s %s" % (i, e.code(), e.details()), file=sys.stderr)

    deadline = time.time() + args.seconds if args.seconds else None
    i = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        while True:
            batch = args.concurrency if deadline else min(args.concurrency, args.requests - i)
            if batch <= 0:
                break
            list(pool.map(one, range(i, i + batch)))
            i += batch
            if deadline and time.time() >= deadline:
                break
    channel.close()
    print("ok %d failed %d" % (ok, failed), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="role", required=True)
    b = sub.add_parser("back")
    b.add_argument("--listen", default="127.0.0.1:0")
    b.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    f = sub.add_parser("front")
    f.add_argument("--listen", default="127.0.0.1:0")
    f.add_argument("--back", required=True)
    c = sub.add_parser("client")
    c.add_argument("--target", required=True)
    c.add_argument("--method", default="/demo.Front/Page")
    c.add_argument("--payload", default="")
    c.add_argument("--requests", type=int, default=1)
    c.add_argument("--concurrency", type=int, default=1)
    c.add_argument("--seconds", type=float, default=0)
    c.add_argument("--verbose", action="store_true")
    c.add_argument("--tls-ca")
    c.add_argument("--traceparent", action="store_true", help="send each call with a traceparent of its own")
    args = ap.parse_args()
    if args.role == "back":
        serve("back", args.listen, Back().handler(), args.tls)
    elif args.role == "front":
        serve("front", args.listen, Front(args.back).handler())
    else:
        client(args)


if __name__ == "__main__":
    main()
