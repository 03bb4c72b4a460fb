"""W3C Trace Context Level 2, to the letter, under the agent: one case per MUST and SHOULD of §3 and §4
(and W3C Baggage's pass-through), run through four clients the agent injects into — Python `urllib`
and libcurl (HTTP/1.1, tracecontext/service.py), Node.js `http` (service.js) and grpcio (HTTP/2
metadata, service.py grpc). Each service never touches trace headers: it gets a request with the
case's header lines (sent byte for byte by this test), makes one call to a bare harness that records
the trace headers it receives, and the case checks them:
  - traceparent: exactly one, version 00, a parent id that is new (not the caller's, not zero); the
    caller's trace id when the case joins, another one otherwise; the flags the case says;
  - tracestate and baggage: exactly the value the case says, or no such header at all.
Cases marked h1 only test HTTP/1.x syntax that HTTP/2 does not have (field names are lowercase and
values carry no surrounding whitespace there: RFC 9113 §8.2.1). The table below is the map from case
to section; docs/tracing.md has the same rules as a table of what the agent does.

Then a traced front (urllib) calling a traced back-end (Node.js): a request with
`tracestate: vendor1=a,vendor2=b` and `baggage` arrives at the back-end with both, unchanged and in
order, the back-end's transaction stores the tracestate (`txray show`), and the back-end sends them on.
"""
import json
import os
import shutil
import socket
import subprocess
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from txraytest import (PYTHON, TXRAY, Collector, TxrayTestCase, free_port, show_json, wait_for, wait_port,
                       wait_transactions)

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE_PY = os.path.join(HERE, "tracecontext", "service.py")
SERVICE_JS = os.path.join(HERE, "tracecontext", "service.js")
NODE = shutil.which("node") or "/usr/bin/node"
TRACE_HEADERS = ("traceparent", "tracestate", "baggage")

TID = "4bf92f3577b34da6a3ce929d0e0e4736"
PID = "00f067aa0ba902b7"
TP = f"00-{TID}-{PID}-01"


def members(n):
    return ",".join(f"k{i}=v{i}" for i in range(n))


LONG = "a=1,b=2," + "big=" + "x" * 196 + ",c=3" + "".join(f",m{i:02d}=" + "v" * 10 for i in range(25))
LONG_CUT = "a=1,b=2,c=3" + "".join(f",m{i:02d}=" + "v" * 10 for i in range(25))
TS = ("tracestate", "vendor1=a,vendor2=b")

# name: (section, header lines, expected: join, outgoing flags, tracestate (None: absent), baggage, h1 only)
J, N = True, False
CASES = {
    "tp_valid":                     ("§3.2.2, §3.4, §4.3",      [("traceparent", TP)], J, "01", None, None, False),
    "tp_sampled_off_passed":        ("§3.2.2.5.1",      [("traceparent", TP[:-2] + "00")], J, "00", None, None, False),
    "tp_random_flag_kept":          ("§3.2.2.5.2",      [("traceparent", TP[:-2] + "03")], J, "03", None, None, False),
    "tp_random_flag_alone_kept":    ("§3.2.2.5.2",      [("traceparent", TP[:-2] + "02")], J, "02", None, None, False),
    "tp_unknown_flags_zeroed":      ("§3.2.2.6",        [("traceparent", TP[:-2] + "ff")], J, "03", None, None, False),
    "tp_version_ff_invalid":        ("§3.2.2.1",        [("traceparent", "ff" + TP[2:])], N, "03", None, None, False),
    "tp_version_not_hex":           ("§3.2.2.1",        [("traceparent", "0x" + TP[2:])], N, "03", None, None, False),
    "tp_version_uppercase":         ("§3.2.2.1, §3.2.4",        [("traceparent", "CC" + TP[2:])], N, "03", None, None, False),
    "tp_higher_version":            ("§3.2.4, §3.4",    [("traceparent", "cc" + TP[2:])], J, "01", None, None, False),
    "tp_higher_version_more_fields": ("§3.2.4",   [("traceparent", "cc" + TP[2:] + "-what-the-future-will-be-like")], J, "01", None, None, False),
    "tp_higher_version_bad_separator": ("§3.2.4", [("traceparent", "cc" + TP[2:] + ".what-the-future-will-be-like")], N, "03", None, None, False),
    "tp_version_00_extra_field":    ("§3.2.2.2, §3.2.4",          [("traceparent", TP + "-what")], N, "03", None, None, False),
    "tp_trace_id_uppercase":        ("§3.2.2.3",        [("traceparent", f"00-{TID.upper()}-{PID}-01")], N, "03", None, None, False),
    "tp_trace_id_zero":             ("§3.2.2.3",        [("traceparent", f"00-{'0' * 32}-{PID}-01")], N, "03", None, None, False),
    "tp_trace_id_short":            ("§3.2.2.3",        [("traceparent", f"00-{TID[:-1]}-{PID}-01")], N, "03", None, None, False),
    "tp_trace_id_not_hex":          ("§3.2.2.3",        [("traceparent", f"00-{TID[:-1]}g-{PID}-01")], N, "03", None, None, False),
    "tp_parent_id_zero":            ("§3.2.2.4",        [("traceparent", f"00-{TID}-{'0' * 16}-01")], N, "03", None, None, False),
    "tp_parent_id_long":            ("§3.2.2.4",        [("traceparent", f"00-{TID}-{PID}0-01")], N, "03", None, None, False),
    "tp_parent_id_uppercase":       ("§3.2.2.4",        [("traceparent", f"00-{TID}-{PID.upper()}-01")], N, "03", None, None, False),
    "tp_flags_not_hex":             ("§3.2.2.5",        [("traceparent", TP[:-2] + "0g")], N, "03", None, None, False),
    "tp_flags_short":               ("§3.2.2.5",        [("traceparent", TP[:-1])], N, "03", None, None, False),
    "tp_bad_separator":             ("§3.2.2.2",          [("traceparent", TP.replace("-", "_", 1))], N, "03", None, None, False),
    "tp_duplicated":                ("§3.2, §4.3",      [("traceparent", TP), ("traceparent", f"00-{TID}-{PID[:-1]}8-01"), TS], N, "03", None, None, False),
    "tp_duplicated_same_value":     ("§3.2, §4.3",      [("traceparent", TP), ("traceparent", TP), TS], N, "03", None, None, False),
    "tp_surrounding_whitespace":    ("§3.2.2 (RFC 9110 OWS)", [("traceparent", " \t" + TP + " ")], J, "01", None, None, True),
    "tp_header_name_any_case":      ("§3.2.1, §3.3.1",            [("TraceParent", TP), ("TRACESTATE", "foo=1")], J, "01", "foo=1", None, True),
    "tp_absent_new_trace":          ("§4.2, §3.2.2.5.2", [], N, "03", None, None, False),
    "ts_without_traceparent_dropped": ("§3.3, §4.2", [TS], N, "03", None, None, False),
    "ts_with_invalid_traceparent_dropped": ("§3.3, §4.3", [("traceparent", "ff" + TP[2:]), TS], N, "03", None, None, False),
    "ts_propagated":                ("§3.3, §3.5, §4.3",      [("traceparent", TP), TS], J, "01", "vendor1=a,vendor2=b", None, False),
    "ts_multiple_lines_combined":   ("§3.3.1.4",          [("traceparent", TP), ("tracestate", "foo=1"), ("tracestate", "bar=2,baz=3")], J, "01", "foo=1,bar=2,baz=3", None, False),
    "ts_empty_line_accepted":       ("§3.3.1.2",          [("traceparent", TP), ("tracestate", ""), ("tracestate", "foo=1")], J, "01", "foo=1", None, False),
    "ts_empty_members_and_ows":     ("§3.3.1.2, §3.3.1.3",        [("traceparent", TP), ("tracestate", "foo=1 , , bar=2")], J, "01", "foo=1,bar=2", None, False),
    "ts_32_members_kept":           ("§3.3.1.3, §3.3.1.5",        [("traceparent", TP), ("tracestate", members(32))], J, "01", members(32), None, False),
    "ts_33_members_dropped":        ("§3.3.1.3, §3.3.1.5",        [("traceparent", TP), ("tracestate", members(33))], J, "01", None, None, False),
    "ts_key_256_kept":              ("§3.3.1.3.1",      [("traceparent", TP), ("tracestate", "z" * 256 + "=1")], J, "01", "z" * 256 + "=1", None, False),
    "ts_key_257_dropped":           ("§3.3.1.3.1",      [("traceparent", TP), ("tracestate", "z" * 257 + "=1")], J, "01", None, None, False),
    "ts_multi_tenant_key_kept":     ("§3.3.1.3.1",      [("traceparent", TP), ("tracestate", "tenant@vendor=1,0t@v=2")], J, "01", "tenant@vendor=1,0t@v=2", None, False),
    "ts_system_id_too_long_dropped": ("§3.3.1.3.1",     [("traceparent", TP), ("tracestate", "t@" + "v" * 15 + "=1")], J, "01", None, None, False),
    "ts_key_uppercase_dropped":     ("§3.3.1.3.1",      [("traceparent", TP), ("tracestate", "foo=1,Bar=2")], J, "01", None, None, False),
    "ts_key_bad_character_dropped": ("§3.3.1.3.1",      [("traceparent", TP), ("tracestate", "foo.bar=1")], J, "01", None, None, False),
    "ts_value_256_kept":            ("§3.3.1.3.2",      [("traceparent", TP), ("tracestate", "foo=" + "v" * 256)], J, "01", "foo=" + "v" * 256, None, False),
    "ts_value_257_dropped":         ("§3.3.1.3.2",      [("traceparent", TP), ("tracestate", "foo=" + "v" * 257)], J, "01", None, None, False),
    "ts_value_bad_character_dropped": ("§3.3.1.3.2",    [("traceparent", TP), ("tracestate", "foo=a=b")], J, "01", None, None, False),
    "ts_member_without_value_dropped": ("§3.3.1.3",     [("traceparent", TP), ("tracestate", "foo=1,bar")], J, "01", None, None, False),
    "ts_duplicate_key_dropped":     ("§3.3.1.3",        [("traceparent", TP), ("tracestate", "foo=1"), ("tracestate", "foo=2")], J, "01", None, None, False),
    "ts_truncated_long_members_first": ("§3.3.1.5, §3.5", [("traceparent", TP), ("tracestate", LONG)], J, "01", LONG_CUT, None, False),
    "bg_passed_unchanged":          ("W3C Baggage §3",  [("baggage", "userId=alice,serverNode=DF%2028;p=1")], N, "03", None, "userId=alice,serverNode=DF%2028;p=1", False),
    "bg_lines_combined":            ("W3C Baggage §3",  [("traceparent", TP), TS, ("baggage", "a=1"), ("baggage", "b=2")], J, "01", "vendor1=a,vendor2=b", "a=1,b=2", False),
}


class Harness(ThreadingHTTPServer):
    daemon_threads = True


class HarnessHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        got = [[k.lower(), v] for k, v in self.headers.items() if k.lower() in TRACE_HEADERS]
        body = json.dumps({"got": got}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def h1_request(port, path, lines):
    """GET path with these header lines, written byte for byte; the JSON answer."""
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    head += "".join(f"{k}:{' ' if v[:1] not in (' ', chr(9)) else ''}{v}\r\n" for k, v in lines)
    head += "Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head.encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    status = data.split(b"\r\n", 1)[0]
    body = data.split(b"\r\n\r\n", 1)[1]
    if b" 200 " not in status:
        raise AssertionError(f"{status!r}: {body[:300]!r}")
    return json.loads(body)


def case_lines(i, lines):
    """The case's header lines with a parent id of its own: a real caller's span ids differ per request,
    and the agent tells requests apart by them (two requests in flight with one caller span cannot be
    told apart: span_owner.h)."""
    pid = f"{0xa000 + i:016x}"
    return [(k, v.replace(PID, pid).replace(PID.upper(), pid.upper())) for k, v in lines]


def check(case, got, lines=None):
    """What is wrong with the headers a call carried (empty: the case passes)."""
    section, case_lines_, join, flags, ts, bg, _ = CASES[case]
    lines = lines if lines is not None else case_lines_
    bad = []
    tps = [v for k, v in got if k == "traceparent"]
    if len(tps) != 1:
        return [f"{len(tps)} traceparent headers"]
    tp = tps[0]
    parts = tp.split("-")
    if len(tp) != 55 or len(parts) != 4 or parts[0] != "00":
        bad.append(f"traceparent {tp!r} is not version 00")
        return bad
    _, tid, pid, fl = parts
    incoming_pid = next((v.strip()[36:52] for k, v in lines if k.lower() == "traceparent"), None)
    if pid == "0" * 16 or pid == incoming_pid:
        bad.append(f"parent id {pid} not new")
    if join and tid != TID:
        bad.append(f"trace id {tid}, expected the caller's")
    if not join and (tid == TID or tid == "0" * 32):
        bad.append(f"trace id {tid}, expected a new one")
    if fl != flags:
        bad.append(f"flags {fl}, expected {flags}")
    for name, want in (("tracestate", ts), ("baggage", bg)):
        vals = [v for k, v in got if k == name]
        if want is None and vals:
            bad.append(f"{name} {vals!r}, expected none")
        elif want is not None and vals != [want]:
            bad.append(f"{name} {vals!r}, expected [{want!r}]")
    return bad


class TraceContextConformance(TxrayTestCase):
    def setUp(self):
        super().setUp()
        self.harness = Harness(("127.0.0.1", 0), HarnessHandler)
        threading.Thread(target=self.harness.serve_forever, daemon=True).start()
        self.addCleanup(self.harness.shutdown)
        self.hport = self.harness.server_address[1]

    def start(self, col, app, argv):
        log = open(os.path.join(self.tmp, app + ".log"), "w+")
        self.addCleanup(log.close)
        p = self.spawn([TXRAY, "run", "--collector", col.endpoint, "--app", app, "--", *argv], stdout=log,
                       stderr=subprocess.STDOUT)

        def up():
            log.seek(0)
            text = log.read()
            self.assertIsNone(p.poll(), f"{app} exited: {text}")
            return "listening" in text

        wait_for(up, 30, what=f"{app} listening")
        return p

    def run_cases(self, client, call, h2=False):
        results, failures = [], []
        for i, (case, (section, lines, *_rest)) in enumerate(CASES.items()):
            if h2 and CASES[case][6]:
                results.append(f"{case:40} {section:22} n/a (HTTP/1.x syntax)")
                continue
            try:
                lines = case_lines(i, lines)
                answer = call(case, lines)
                bad = check(case, answer["next"]["got"], lines)
            except Exception as e:  # noqa: BLE001 - one case's failure must not hide the others
                bad = [repr(e)]
            results.append(f"{case:40} {section:22} {'pass' if not bad else 'FAIL ' + '; '.join(bad)}")
            if bad:
                failures.append(case)
        print(f"\n{client}:\n  " + "\n  ".join(results))
        self.assertEqual(failures, [], f"{client}: cases that failed")
        return len(results)

    def http_client_cases(self, client, argv):
        port = free_port()
        with Collector(self.tmp) as col:
            self.start(col, "tc-" + client, [a.format(port=port, base=f"http://127.0.0.1:{self.hport}") for a in argv])
            wait_port(port)
            self.run_cases(client, lambda case, lines: h1_request(port, "/" + case, lines))

    def test_python_urllib(self):
        self.http_client_cases("urllib", [PYTHON, SERVICE_PY, "urllib", "{port}", "{base}"])

    def test_libcurl(self):
        self.http_client_cases("libcurl", [PYTHON, SERVICE_PY, "libcurl", "{port}", "{base}"])

    @unittest.skipUnless(os.path.exists(NODE), "needs node")
    def test_node_http(self):
        self.http_client_cases("node", [NODE, SERVICE_JS, "{port}", "{base}"])

    def test_grpcio(self):
        import concurrent.futures
        import grpc
        ident = lambda b: b  # noqa: E731

        def harness_handle(request, context):
            got = [[k, v] for k, v in context.invocation_metadata() if k in TRACE_HEADERS]
            return json.dumps({"got": got}).encode()

        class Any(grpc.GenericRpcHandler):
            def service(self, details):
                return grpc.unary_unary_rpc_method_handler(harness_handle, request_deserializer=ident,
                                                           response_serializer=ident)

        hserver = grpc.server(concurrent.futures.ThreadPoolExecutor(4), handlers=[Any()])
        hport = hserver.add_insecure_port("127.0.0.1:0")
        hserver.start()
        self.addCleanup(hserver.stop, None)
        port = free_port()
        with Collector(self.tmp) as col:
            self.start(col, "tc-grpc", [PYTHON, SERVICE_PY, "grpc", str(port), f"127.0.0.1:{hport}"])
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            self.addCleanup(channel.close)

            def call(case, lines):
                md = tuple((k.lower(), v) for k, v in lines)
                fn = channel.unary_unary(f"/tc.Svc/{case}", request_serializer=ident, response_deserializer=ident)
                return json.loads(fn(b"x", metadata=md, timeout=30))

            self.run_cases("grpcio", call, h2=True)

    @unittest.skipUnless(os.path.exists(NODE), "needs node")
    def test_front_and_back_keep_tracestate_and_baggage(self):
        back, front = free_port(), free_port()
        lines = [("traceparent", TP), ("tracestate", "vendor1=a,vendor2=b"), ("baggage", "userId=alice,isProduction=false")]
        with Collector(self.tmp) as col:
            self.start(col, "tc-back", [NODE, SERVICE_JS, str(back), f"http://127.0.0.1:{self.hport}"])
            self.start(col, "tc-front", [PYTHON, SERVICE_PY, "urllib", str(front), f"http://127.0.0.1:{back}"])
            wait_port(back)
            wait_port(front)
            answer = h1_request(front, "/order/1", lines)
            wait_transactions(col.db, 2)
        at_back = answer["next"]["got"]  # what the back-end program received from the traced front
        self.assertEqual([k for k, _ in at_back], ["traceparent", "tracestate", "baggage"])
        self.assertEqual(dict(at_back)["tracestate"], "vendor1=a,vendor2=b")
        self.assertEqual(dict(at_back)["baggage"], "userId=alice,isProduction=false")
        self.assertEqual(dict(at_back)["traceparent"][3:35], TID)
        past_back = answer["next"]["next"]["got"]  # and what the traced back-end sent on
        self.assertEqual([k for k, _ in past_back], ["traceparent", "tracestate", "baggage"])
        self.assertEqual(dict(past_back)["traceparent"][3:35], TID)
        self.assertEqual(dict(past_back)["tracestate"], "vendor1=a,vendor2=b")
        self.assertEqual(dict(past_back)["baggage"], "userId=alice,isProduction=false")
        txs = {t["app"]: t for t in show_json(col.db, "--last", "10")}
        for app in ("tc-front", "tc-back"):
            self.assertEqual(txs[app]["trace_id"], TID)
            self.assertEqual(txs[app]["attributes"].get("tracestate"), "vendor1=a,vendor2=b")
            self.assertEqual(txs[app]["attributes"].get("trace_flags"), "01")
        [call] = [s for s in txs["tc-front"]["steps"] if s["kind"] == "HTTP_CALL"]
        self.assertEqual(txs["tc-back"]["parent_span_id"], call["span_id"])
        text = subprocess.run([TXRAY, "show", "--db", col.db, "--last", "1", "--app", "tc-back"],
                              capture_output=True, text=True).stdout
        self.assertIn("tracestate=vendor1=a,vendor2=b", text)


if __name__ == "__main__":
    unittest.main()
