"""A service that never touches trace headers itself, for the trace-context conformance tests
(test_rpc_tracecontext.py): every request it gets makes one call to the URL it was started with (the
request's path appended), with the client named on its command line, and it answers with JSON:
{"got": [[name, value], ...] (the trace headers it received, as the program saw them), "next": <the
body of the downstream answer, parsed>}.

    service.py urllib|libcurl PORT DOWNSTREAM_BASE_URL
    service.py grpc PORT DOWNSTREAM_HOST:PORT     (methods /tc.Svc/<case> -> /tc.Svc/<case> downstream)
"""
import ctypes
import http.server
import json
import sys

TRACE_HEADERS = ("traceparent", "tracestate", "baggage")


def call_urllib(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=20) as r:
        return r.read()


_curl = None


def call_libcurl(url):
    global _curl
    if _curl is None:
        # Loaded into the global scope and called through it, so the agent's libcurl hooks are the ones called.
        ctypes.CDLL("libcurl.so.4", mode=ctypes.RTLD_GLOBAL)
        _curl = ctypes.CDLL(None)
        _curl.curl_easy_init.restype = ctypes.c_void_p
    body = []
    WRITE = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p)
    cb = WRITE(lambda p, s, n, u: body.append(ctypes.string_at(p, s * n)) or s * n)
    h = ctypes.c_void_p(_curl.curl_easy_init())
    _curl.curl_easy_setopt(h, 10002, ctypes.c_char_p(url.encode()))  # CURLOPT_URL
    _curl.curl_easy_setopt(h, 20011, cb)                              # CURLOPT_WRITEFUNCTION
    rc = _curl.curl_easy_perform(h)
    _curl.curl_easy_cleanup(h)
    if rc != 0:
        raise RuntimeError(f"curl_easy_perform: {rc}")
    return b"".join(body)


def http_service(kind, port, base):
    call = call_urllib if kind == "urllib" else call_libcurl

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            got = [[k.lower(), v] for k, v in self.headers.items() if k.lower() in TRACE_HEADERS]
            try:
                nxt = json.loads(call(base + self.path))
                code = 200
            except Exception as e:  # noqa: BLE001 - reported to the test
                nxt, code = {"error": repr(e)}, 502
            body = json.dumps({"got": got, "next": nxt}).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    print("listening", flush=True)
    srv.serve_forever()


def grpc_service(port, downstream):
    import concurrent.futures
    import grpc
    ident = lambda b: b  # noqa: E731
    channel = grpc.insecure_channel(downstream)

    def handle(method, request, context):
        got = [[k, v] for k, v in context.invocation_metadata() if k in TRACE_HEADERS]
        nxt = channel.unary_unary(method, request_serializer=ident, response_deserializer=ident)(request, timeout=20)
        return json.dumps({"got": got, "next": json.loads(nxt)}).encode()

    class Any(grpc.GenericRpcHandler):
        def service(self, details):
            m = details.method
            return grpc.unary_unary_rpc_method_handler(lambda req, ctx: handle(m, req, ctx),
                                                       request_deserializer=ident, response_serializer=ident)

    server = grpc.server(concurrent.futures.ThreadPoolExecutor(4), handlers=[Any()])
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(f"listening on grpc port {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    kind, port, down = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if kind == "grpc":
        grpc_service(port, down)
    else:
        http_service(kind, port, down)
