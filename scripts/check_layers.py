#!/usr/bin/env python3
"""Checks the agent's include graph against its layers (docs/design.md, "The agent's folders").

Arrows go one way: hooks -> hints -> protocols -> core -> cpu; transport reads finished transactions
and may use every layer but the interposers. Within protocols/, dispatch/ is the one place that knows
every protocol; a protocol includes another protocol only through a named seam (SEAMS below), and
nothing in core/ or cpu/ includes a protocol. Every include in agent/ names its folder from agent/
("core/transaction.h"), so the graph is read off the #include lines alone.

Exit status 1, with one line per offending include, when an edge is not allowed. Run by CTest
(agent.layers) and by hand: scripts/check_layers.py [AGENT_DIR].
"""
import os
import re
import sys

# folder -> the folders it may include from (its own folder is always allowed)
ALLOWED = {
    "hooks": {"hints", "protocols", "core", "cpu", "transport", "symbolize"},
    "hints": {"protocols/dispatch", "core", "cpu"},
    "protocols/dispatch": {"protocols", "hints/hint_board.h", "core", "cpu"},
    "protocols": {"core", "cpu"},           # every protocols/<name>/ folder
    "core": {"cpu"},
    "cpu": set(),
    "transport": {"protocols", "hints", "core", "cpu", "symbolize"},
    "symbolize": set(),
}
# Headers every layer may include: the hooks' own helpers (finding a real libc function, the thread
# guard) and the agent's settings and counters.
BASE = {"hooks/hook.h", "core/config.h", "core/counters.h"}
# Named seams between protocols (a header, or a whole folder), and the one reason each exists.
SEAMS = {
    ("protocols/http1", "protocols/http2/h2_conn.h"): "an HTTP/1.1 connection upgraded to h2c, or one that "
                                                       "begins with the HTTP/2 preface, is handed over",
    ("protocols/http1", "protocols/tracecontext/traceparent.h"): "W3C trace context in HTTP/1 heads",
    ("protocols/http2", "protocols/tracecontext/traceparent.h"): "W3C trace context in HTTP/2 headers",
    ("protocols/http1", "protocols/tracecontext/context.h"): "W3C trace context in HTTP/1 heads",
    ("protocols/http2", "protocols/tracecontext/context.h"): "W3C trace context in HTTP/2 headers",
    # The gateway protocols: a connection whose first bytes are a FastCGI record or a uwsgi packet is
    # handed over like an HTTP/2 one; both carry CGI variables (cgi_vars.h names their requests), uwsgi's
    # answer is a raw HTTP/1.x response, and the outbound side implements the dispatch's WireClient.
    ("protocols/http1", "protocols/fastcgi/fastcgi_conn.h"): "a connection that begins with a FastCGI "
                                                             "BEGIN_REQUEST record is handed over",
    ("protocols/http1", "protocols/uwsgi/uwsgi_conn.h"): "a connection that begins with a uwsgi packet is handed over",
    ("protocols/fastcgi", "protocols/tracecontext/context.h"): "W3C trace context in CGI variables",
    ("protocols/fastcgi", "protocols/tracecontext/traceparent.h"): "W3C trace context in CGI variables",
    ("protocols/uwsgi", "protocols/tracecontext/context.h"): "W3C trace context in CGI variables",
    ("protocols/uwsgi", "protocols/tracecontext/traceparent.h"): "W3C trace context in CGI variables",
    ("protocols/uwsgi", "protocols/fastcgi/cgi_vars.h"): "CGI variables make a request's name and context",
    ("protocols/uwsgi", "protocols/http1/http_parse.h"): "the application's answer is a raw HTTP/1.x response",
    ("protocols/uwsgi", "protocols/fastcgi/splice.h"): "the trace context put into a packet's vars, with the "
                                                       "program's byte counts kept as FastCGI's",
    ("protocols/fastcgi", "protocols/dispatch/wire_client.h"): "the interface a wire parser implements",
    ("protocols/uwsgi", "protocols/dispatch/wire_client.h"): "the interface a wire parser implements",
    # The database protocols: they implement the dispatch's WireClient, and record SQL rows the way the
    # library hooks do (text normalized and masked, binds formatted, the same row fields).
    ("protocols/pg", "protocols/dispatch/wire_client.h"): "the interface a wire parser implements",
    ("protocols/mysql", "protocols/dispatch/wire_client.h"): "the interface a wire parser implements",
    ("protocols/pg", "protocols/sql"): "SQL text, binds and rows as the library hooks record them",
    ("protocols/mysql", "protocols/sql"): "SQL text, binds and rows as the library hooks record them",
    # The caches: Redis and memcached implement the dispatch's WireClient; memcached masks keys and keeps
    # its queue of commands the way Redis does.
    ("protocols/redis", "protocols/dispatch/wire_client.h"): "the interface a wire parser implements",
    ("protocols/memcached", "protocols/dispatch/wire_client.h"): "the interface a wire parser implements",
    ("protocols/memcached", "protocols/redis/cache_key.h"): "cache keys masked into one pattern for both caches",
    ("protocols/memcached", "protocols/redis/cache_row.h"): "cache rows opened, queued and closed alike",
}
# Known edges against the arrows, each with its reason; the list only shrinks (empty now).
EXCEPTIONS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "protocols" and len(parts) > 2:
        return "protocols/" + parts[1]
    return parts[0]


def allowed(src, dst):
    src_layer, dst_layer = layer_of(src), layer_of(dst)
    if src_layer == dst_layer or dst in BASE:
        return True
    if (src, dst) in EXCEPTIONS or (src_layer, dst) in SEAMS or (src_layer, dst_layer) in SEAMS:
        return True
    rules = ALLOWED.get(src_layer) or (ALLOWED["protocols"] if src_layer.startswith("protocols/") else set())
    if src_layer.startswith("protocols/") and src_layer != "protocols/dispatch":
        # a protocol: core, cpu, and no other protocol but through a seam
        return dst_layer in rules
    return any(dst == r or dst_layer == r or dst.startswith(r + "/") for r in rules)


def main():
    agent = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent")
    agent = os.path.abspath(agent)
    bad, edges = [], 0
    for folder in ALLOWED:
        for dp, _, files in os.walk(os.path.join(agent, folder)):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp", ".c")):
                    continue
                path = os.path.join(dp, f)
                rel = os.path.relpath(path, agent)
                for inc in INCLUDE.findall(open(path, encoding="utf-8").read()):
                    if inc.startswith(("txray/", "txray.")):  # the public C API and the protocol's generated headers
                        continue
                    if not os.path.exists(os.path.join(agent, inc)):
                        bad.append(f"{rel}: includes \"{inc}\", which is not a path from agent/")
                        continue
                    edges += 1
                    if not allowed(rel, inc):
                        bad.append(f"{rel}: {layer_of(rel)}/ may not include {inc}")
    for line in bad:
        print(line)
    print(f"check_layers: {edges} includes, {len(bad)} not allowed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
