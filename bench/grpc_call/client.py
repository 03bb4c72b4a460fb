#!/usr/bin/env python3
"""bench/grpc_call's client: CALLS unary calls /demo.Back/Get on one channel (one HTTP/2 connection),
CONC at a time (GRPC_METHOD: another method, e.g. /demo.Front/Page), after a warm-up (over TLS when a CA file is given: client.py TARGET CALLS CONC [CA]); prints "ns_per_call <wall ns per call> cpu_ns_per_call <process CPU ns per call>"."""
import concurrent.futures
import os
import sys
import time

import grpc

target, calls, conc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ident = lambda b: b
if len(sys.argv) > 4:
    with open(sys.argv[4], "rb") as f:
        ch = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=f.read()))
else:
    ch = grpc.insecure_channel(target)
grpc.channel_ready_future(ch).result(timeout=20)
get = ch.unary_unary(os.environ.get("GRPC_METHOD", "/demo.Back/Get"), request_serializer=ident, response_deserializer=ident)
for _ in range(50):
    get(b"warm", timeout=20)
per = calls // conc


def worker(_):
    for _ in range(per):
        get(b"k", timeout=20)


t0, c0 = time.perf_counter_ns(), time.process_time_ns()
if conc == 1:
    worker(0)
else:
    with concurrent.futures.ThreadPoolExecutor(conc) as pool:
        list(pool.map(worker, range(conc)))
t1, c1 = time.perf_counter_ns(), time.process_time_ns()
print("ns_per_call %d cpu_ns_per_call %d" % ((t1 - t0) // (per * conc), (c1 - c0) // (per * conc)))
ch.close()
