// A small OTLP/HTTP trace receiver for the end-to-end tests (tests/e2e/test_otlp_*.py). It decodes every
// POST /v1/traces with the OFFICIAL OpenTelemetry protocol definitions — the protobuf root generated from
// opentelemetry-proto that @opentelemetry/otlp-transformer ships, never a copy of the .proto — and writes
// one JSON line per span (ids in hex, attributes as a map, resource attributes beside) to --out.
// package.json pins 0.210.0: releases up to 0.216.0 ship the trace messages in that root, 0.217.0 and
// later only the metrics ones (bumping past 0.216 means finding the definitions elsewhere).
//
//   node receiver.js --port P --out FILE [--refuse-for S] [--refuse-status 503] [--retry-after 1]
//
// --discard 1: accept without decoding (to measure the exporter, not this receiver).
// --refuse-for S: from the first request on, answer --refuse-status (with Retry-After) for S seconds,
// then 200. GET /stats answers {"requests", "refused", "accepted", "spans", "bad"} as JSON.
"use strict";
const http = require("http");
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");

const pkgMain = require.resolve("@opentelemetry/otlp-transformer");
const root = require(path.join(path.dirname(pkgMain), "generated", "root.js"));
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = root.opentelemetry.proto.collector.trace.v1;

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const port = Number(args.port || 4318);
const out = fs.openSync(args.out, "a");
const refuseFor = Number(args["refuse-for"] || 0) * 1000;
const refuseStatus = Number(args["refuse-status"] || 503);
const retryAfter = args["retry-after"] || "1";
const discard = args.discard === "1";
const stats = { requests: 0, refused: 0, accepted: 0, spans: 0, bad: 0, gzip: 0 };
let firstRequest = 0;

const hex = (b) => Buffer.from(b || []).toString("hex");

function anyValue(v) {
  if (!v) return null;
  if (v.stringValue !== undefined && v.stringValue !== null && v.value === "stringValue") return v.stringValue;
  if (v.value === "intValue") return Number(v.intValue.toString());
  if (v.value === "boolValue") return v.boolValue;
  if (v.value === "doubleValue") return v.doubleValue;
  if (v.value === "arrayValue") return (v.arrayValue.values || []).map(anyValue);
  if (v.value === "bytesValue") return hex(v.bytesValue);
  return null;
}

function attrs(list, where) {
  const m = {};
  for (const kv of list || []) {
    if (kv.key in m) throw new Error(`attribute ${kv.key} twice on ${where}`);
    m[kv.key] = anyValue(kv.value);
  }
  return m;
}

function record(req) {
  const lines = [];
  for (const rs of req.resourceSpans || []) {
    const resource = attrs(rs.resource && rs.resource.attributes, "resource");
    for (const ss of rs.scopeSpans || []) {
      for (const s of ss.spans || []) {
        lines.push(JSON.stringify({
          trace_id: hex(s.traceId), span_id: hex(s.spanId), parent_span_id: hex(s.parentSpanId),
          name: s.name, kind: s.kind, flags: s.flags,
          start: s.startTimeUnixNano.toString(), end: s.endTimeUnixNano.toString(),
          attributes: attrs(s.attributes, s.name),
          events: (s.events || []).map((e) => ({ name: e.name, time: e.timeUnixNano.toString(), attributes: attrs(e.attributes, e.name) })),
          status: s.status ? { code: s.status.code || 0, message: s.status.message || "" } : { code: 0, message: "" },
          scope: ss.scope ? ss.scope.name : "", resource,
        }));
      }
    }
  }
  if (lines.length) fs.writeSync(out, lines.join("\n") + "\n");
  return lines.length;
}

const server = http.createServer((rq, rs) => {
  if (rq.method === "GET" && rq.url === "/stats") {
    rs.writeHead(200, { "Content-Type": "application/json" });
    rs.end(JSON.stringify(stats));
    return;
  }
  const chunks = [];
  rq.on("data", (c) => chunks.push(c));
  rq.on("end", () => {
    stats.requests++;
    if (!firstRequest) firstRequest = Date.now();
    if (rq.method !== "POST" || rq.url !== "/v1/traces") {
      rs.writeHead(404);
      rs.end();
      return;
    }
    if (refuseFor && Date.now() - firstRequest < refuseFor) {
      stats.refused++;
      rs.writeHead(refuseStatus, { "Retry-After": retryAfter, "Content-Type": "text/plain" });
      rs.end("busy\n");
      return;
    }
    let n;
    if (discard) {
      stats.accepted++;
      rs.writeHead(200, { "Content-Type": "application/x-protobuf" });
      rs.end();
      return;
    }
    try {
      let body = Buffer.concat(chunks);
      if (rq.headers["content-type"] !== "application/x-protobuf") throw new Error(`content-type ${rq.headers["content-type"]}`);
      if (rq.headers["content-encoding"] === "gzip") {
        body = zlib.gunzipSync(body);
        stats.gzip++;
      }
      n = record(ExportTraceServiceRequest.decode(body));
    } catch (e) {
      stats.bad++;
      process.stderr.write(`receiver: bad request: ${e.stack}\n`);
      rs.writeHead(400, { "Content-Type": "text/plain" });
      rs.end(String(e));
      return;
    }
    stats.accepted++;
    stats.spans += n;
    rs.writeHead(200, { "Content-Type": "application/x-protobuf" });
    rs.end(Buffer.from(ExportTraceServiceResponse.encode(ExportTraceServiceResponse.create({})).finish()));
  });
});
server.keepAliveTimeout = 30000;
server.listen(port, "127.0.0.1", () => process.stderr.write(`receiver: listening on ${port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
