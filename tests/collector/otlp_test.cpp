// The OTLP mapping (collector/otlp/span_builder.*) on hand-made batches: span kinds and ids, nesting,
// events, the database of SQL rows, process mode, summaries; and the exporter's small helpers.
#include <gtest/gtest.h>

#include <map>

#include "exporter.h"
#include "http_sender.h"
#include "span_builder.h"

using namespace txray;
using namespace txray::otlp;
using otpb::trace::v1::Span;

namespace {

v1::Step* step(v1::Transaction& tx, v1::StepKind k, int parent, uint64_t off, const std::string& text = {}) {
  auto* s = tx.add_steps();
  s->set_kind(k);
  s->set_parent(parent);
  s->set_start_offset_ns(off);
  s->set_gap_ns(off ? 10 : 0);
  s->set_cpu_ns(off ? 3 : 0);
  s->set_text(text);
  s->set_rows(-1);
  s->set_changes(-1);
  return s;
}

void attr(v1::Step* s, const std::string& k, const std::string& v) {
  auto* a = s->add_attributes();
  a->set_key(k);
  a->set_value(v);
}

v1::Batch batch(const std::string& kind = "http") {
  v1::Batch b;
  auto* ag = b.mutable_agent();
  ag->set_instance_id(42);
  ag->set_host("h1");
  ag->set_pid(1234);
  ag->set_program("shop");
  ag->set_app("shop-app");
  ag->set_agent_version("0.1.0");
  auto* tx = b.add_transactions();
  tx->set_txid(0x1122334455667788ULL);
  tx->set_trace_id(std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16));
  tx->set_parent_span_id(0xaabbccddeeff0011ULL);
  tx->set_name(kind == "process" ? "job --all" : "GET /items");
  tx->set_kind(kind);
  tx->set_start_unix_ns(1'000'000'000);
  tx->set_elapsed_ns(1000);
  tx->set_cpu_ns(30);
  tx->set_status(kind == "process" ? 3 : 200);
  tx->set_client_addr("10.0.0.9:5555");
  step(*tx, v1::START, -1, 0);
  return b;
}

std::map<std::string, const otpb::common::v1::AnyValue*> attrs_of(const google::protobuf::RepeatedPtrField<otpb::common::v1::KeyValue>& kv) {
  std::map<std::string, const otpb::common::v1::AnyValue*> m;
  for (const auto& a : kv) m[a.key()] = &a.value();
  return m;
}

std::string hex(const std::string& b) {
  static const char* d = "0123456789abcdef";
  std::string o;
  for (unsigned char c : b) {
    o += d[c >> 4];
    o += d[c & 15];
  }
  return o;
}

}  // namespace

TEST(OtlpSpans, TransactionCallsAndEvents) {
  v1::Batch b = batch();
  auto& tx = *b.mutable_transactions(0);
  auto* conn = step(tx, v1::DB_CONNECT, -1, 10, "sqlite:/data/shop.db");
  attr(conn, "database", "/data/shop.db");
  conn->set_elapsed_ns(5);
  auto* sql = step(tx, v1::SQL, -1, 20, "  select * from items where id = ?");
  sql->set_elapsed_ns(7);
  sql->set_rows(1);
  sql->set_fingerprint(0xfeed);
  auto* call = step(tx, v1::HTTP_CALL, -1, 40, "http://back.example:8081/price/3?x=1");
  call->set_id(0x0102030405060708ULL);
  call->set_status(503);
  call->set_elapsed_ns(50);
  attr(call, "method", "POST");
  auto* sock = step(tx, v1::SOCKET, 3, 41, "10.0.0.2:8081");  // opened inside the call
  attr(sock, "addr", "10.0.0.2");
  attr(sock, "port", "8081");
  sock->set_elapsed_ns(2);
  step(tx, v1::SOCKET_CLOSE, 3, 90, "R=10,W=20")->set_bytes_read(10);
  step(tx, v1::MESSAGE, -1, 95, "render");
  step(tx, v1::END, -1, 1000);
  auto* sum = tx.add_summary();
  sum->set_kind(v1::SQL);
  sum->set_count(9);

  ExportRequest req;
  DbMemory dbs;
  BuildCounts c = add_batch(b, req, dbs);
  EXPECT_EQ(c.transactions, 1u);
  EXPECT_EQ(c.spans, 5u);   // the transaction, DB_CONNECT, SQL, HTTP_CALL, SOCKET
  EXPECT_EQ(c.events, 5u);  // START, SOCKET_CLOSE, MESSAGE, END, the summary line
  ASSERT_EQ(req.resource_spans_size(), 1);
  const auto& rs = req.resource_spans(0);
  auto res = attrs_of(rs.resource().attributes());
  EXPECT_EQ(res["service.name"]->string_value(), "shop-app");
  EXPECT_EQ(res["host.name"]->string_value(), "h1");
  EXPECT_EQ(res["process.pid"]->int_value(), 1234);
  EXPECT_EQ(res["process.executable.name"]->string_value(), "shop");
  EXPECT_EQ(res["telemetry.sdk.name"]->string_value(), "txray");
  const auto& spans = rs.scope_spans(0).spans();
  ASSERT_EQ(spans.size(), 5);

  const Span& root = spans[0];
  EXPECT_EQ(root.kind(), Span::SPAN_KIND_SERVER);
  EXPECT_EQ(hex(root.span_id()), "1122334455667788");
  EXPECT_EQ(hex(root.parent_span_id()), "aabbccddeeff0011");
  EXPECT_EQ(hex(root.trace_id()), "0102030405060708090a0b0c0d0e0f10");
  EXPECT_EQ(root.start_time_unix_nano(), 1'000'000'000u);
  EXPECT_EQ(root.end_time_unix_nano(), 1'000'001'000u);
  auto ra = attrs_of(root.attributes());
  EXPECT_EQ(ra["http.request.method"]->string_value(), "GET");
  EXPECT_EQ(ra["url.path"]->string_value(), "/items");
  EXPECT_EQ(ra["url.scheme"]->string_value(), "http");
  EXPECT_EQ(ra["http.response.status_code"]->int_value(), 200);
  EXPECT_EQ(ra["client.address"]->string_value(), "10.0.0.9");
  EXPECT_EQ(ra["client.port"]->int_value(), 5555);
  EXPECT_EQ(ra["txray.cpu_ns"]->int_value(), 30);
  EXPECT_EQ(root.status().code(), otpb::trace::v1::Status::STATUS_CODE_UNSET);
  ASSERT_EQ(root.events_size(), 4);  // START, MESSAGE, END, summary (SOCKET_CLOSE sits in the call)
  EXPECT_EQ(root.events(0).name(), "START");
  EXPECT_EQ(root.events(3).name(), "txray.summary");
  EXPECT_EQ(attrs_of(root.events(3).attributes())["txray.count"]->int_value(), 9);

  const Span& db = spans[1];
  EXPECT_EQ(db.kind(), Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(db.name(), "connect sqlite");
  EXPECT_EQ(db.parent_span_id(), root.span_id());

  const Span& q = spans[2];
  auto qa = attrs_of(q.attributes());
  EXPECT_EQ(q.name(), "SELECT");
  EXPECT_EQ(qa["db.system.name"]->string_value(), "sqlite");
  EXPECT_EQ(qa["db.namespace"]->string_value(), "/data/shop.db");
  EXPECT_EQ(qa["db.operation.name"]->string_value(), "SELECT");
  EXPECT_EQ(qa["db.query.text"]->string_value(), "  select * from items where id = ?");
  EXPECT_EQ(qa["txray.row"]->int_value(), 2);
  EXPECT_EQ(qa["txray.gap_ns"]->int_value(), 10);
  EXPECT_EQ(qa["txray.cpu_ns"]->int_value(), 3);
  EXPECT_EQ(qa["txray.rows"]->int_value(), 1);
  EXPECT_EQ(qa["txray.fingerprint"]->string_value(), "000000000000feed");
  EXPECT_EQ(q.end_time_unix_nano() - q.start_time_unix_nano(), 7u);
  EXPECT_EQ(hex(q.span_id()), [] {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(derived_span_id(0x1122334455667788ULL, 2)));
    return std::string(buf);
  }());

  const Span& h = spans[3];
  auto ha = attrs_of(h.attributes());
  EXPECT_EQ(h.kind(), Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(hex(h.span_id()), "0102030405060708");  // the id sent in traceparent
  EXPECT_EQ(ha["http.request.method"]->string_value(), "POST");
  EXPECT_EQ(ha["url.full"]->string_value(), "http://back.example:8081/price/3?x=1");
  EXPECT_EQ(ha["server.address"]->string_value(), "back.example");
  EXPECT_EQ(ha["server.port"]->int_value(), 8081);
  EXPECT_EQ(ha["http.response.status_code"]->int_value(), 503);
  EXPECT_EQ(ha["error.type"]->string_value(), "503");
  EXPECT_EQ(h.status().code(), otpb::trace::v1::Status::STATUS_CODE_ERROR);
  ASSERT_EQ(h.events_size(), 1);
  EXPECT_EQ(h.events(0).name(), "SOCKET_CLOSE");
  EXPECT_EQ(attrs_of(h.events(0).attributes())["txray.bytes_read"]->int_value(), 10);

  const Span& s = spans[4];
  EXPECT_EQ(s.parent_span_id(), h.span_id());  // nested in the call
  auto sa = attrs_of(s.attributes());
  EXPECT_EQ(sa["network.peer.address"]->string_value(), "10.0.0.2");
  EXPECT_EQ(sa["network.peer.port"]->int_value(), 8081);
}

TEST(OtlpSpans, ProcessModeIsInternalAndFailed) {
  v1::Batch b = batch("process");
  auto& tx = *b.mutable_transactions(0);
  tx.set_parent_span_id(0);
  tx.set_error("exit status 3");
  step(tx, v1::END, -1, 1000);
  ExportRequest req;
  DbMemory dbs;
  add_batch(b, req, dbs);
  const Span& root = req.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(root.kind(), Span::SPAN_KIND_INTERNAL);
  EXPECT_TRUE(root.parent_span_id().empty());
  EXPECT_EQ(attrs_of(root.attributes())["process.exit.code"]->int_value(), 3);
  EXPECT_EQ(root.status().code(), otpb::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(root.status().message(), "exit status 3");
}

// The W3C context beyond the ids: tracestate as the span's trace_state, the trace's flags as its flags'
// low byte (sampled, random); an older agent's transaction (neither) stays sampled, no trace_state.
TEST(OtlpSpans, TraceStateAndFlags) {
  v1::Batch b = batch();
  auto& tx = *b.mutable_transactions(0);
  tx.set_tracestate("vendor1=a,vendor2=b");
  tx.set_trace_flags(0x03);
  step(tx, v1::END, -1, 1000);
  ExportRequest req;
  DbMemory dbs;
  add_batch(b, req, dbs);
  const Span& root = req.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(root.trace_state(), "vendor1=a,vendor2=b");
  EXPECT_EQ(root.flags() & 0xffu, 0x03u);
  EXPECT_NE(root.flags() & 0x100u, 0u);  // has-is-remote kept

  v1::Batch old = batch();
  step(*old.mutable_transactions(0), v1::END, -1, 1000);
  ExportRequest req2;
  add_batch(old, req2, dbs);
  const Span& r2 = req2.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(r2.trace_state(), "");
  EXPECT_EQ(r2.flags() & 0xffu, 0x01u);
}

TEST(OtlpSpans, DatabaseFromEarlierBatchesAndEvidence) {
  DbMemory dbs;
  // A container (unattributed steps) with the process's connection: no span, but remembered.
  v1::Batch c = batch();
  auto& ctx = *c.mutable_transactions(0);
  ctx.set_kind("unattributed");
  auto* conn = step(ctx, v1::DB_CONNECT, -1, 5, "postgresql://app@db1:5433/orders");
  attr(conn, "database", "orders");
  attr(conn, "host", "db1");
  attr(conn, "port", "5433");
  ExportRequest req;
  EXPECT_EQ(add_batch(c, req, dbs).spans, 0u);
  EXPECT_EQ(req.resource_spans_size(), 0);

  v1::Batch b = batch();
  step(*b.mutable_transactions(0), v1::SQL, -1, 10, "UPDATE t SET a = $1");
  add_batch(b, req, dbs);
  auto qa = attrs_of(req.resource_spans(0).scope_spans(0).spans(1).attributes());
  EXPECT_EQ(qa["db.system.name"]->string_value(), "postgresql");
  EXPECT_EQ(qa["db.namespace"]->string_value(), "orders");
  EXPECT_EQ(qa["server.address"]->string_value(), "db1");
  EXPECT_EQ(qa["server.port"]->int_value(), 5433);
  EXPECT_EQ(qa["db.operation.name"]->string_value(), "UPDATE");

  // Another process, no connection seen: its first row without evidence is other_sql; a row with
  // SQLite's binds names the system for the process from then on.
  DbMemory fresh;
  v1::Batch d = batch();
  d.mutable_agent()->set_instance_id(7);
  auto& dtx = *d.mutable_transactions(0);
  step(dtx, v1::SQL, -1, 10, "BEGIN");
  attr(step(dtx, v1::SQL, -1, 20, "SELECT 1 WHERE ? = ?"), "binds", "int, int");
  step(dtx, v1::SQL, -1, 30, "COMMIT");
  ExportRequest r2;
  add_batch(d, r2, fresh);
  const auto& sp = r2.resource_spans(0).scope_spans(0).spans();
  EXPECT_EQ(attrs_of(sp[1].attributes())["db.system.name"]->string_value(), "other_sql");
  EXPECT_EQ(attrs_of(sp[2].attributes())["db.system.name"]->string_value(), "sqlite");
  EXPECT_EQ(attrs_of(sp[3].attributes())["db.system.name"]->string_value(), "sqlite");
}

TEST(OtlpSpans, SqlOperation) {
  EXPECT_EQ(sql_operation("select 1"), "SELECT");
  EXPECT_EQ(sql_operation("  -- note\n/* c */ (WITH x AS (SELECT 1) SELECT * FROM x)"), "WITH");
  EXPECT_EQ(sql_operation(""), "");
  EXPECT_EQ(sql_operation("?"), "");
}

TEST(OtlpHelpers, UrlsHeadersRetryAfter) {
  EXPECT_EQ(traces_url("http://h:4318"), "http://h:4318/v1/traces");
  EXPECT_EQ(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
  EXPECT_EQ(traces_url("https://h/otlp/v1/traces"), "https://h/otlp/v1/traces");
  EXPECT_EQ(parse_retry_after("7", 0), 7);
  EXPECT_EQ(parse_retry_after("", 0), -1);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470), 10);
  EXPECT_EQ(parse_retry_after("soon", 0), -1);
  std::vector<std::string> out;
  std::string why;
  EXPECT_TRUE(header_lines({"api-key=abc", "X-Tenant: t1"}, out, &why));
  EXPECT_EQ(out, (std::vector<std::string>{"api-key: abc", "X-Tenant: t1"}));
  EXPECT_FALSE(header_lines({"novalue"}, out, &why));
  EXPECT_TRUE(valid_endpoint("http://127.0.0.1:4318", &why));
  EXPECT_FALSE(valid_endpoint("tcp://127.0.0.1:4318", &why));
  std::string big(100000, 'a');
  EXPECT_LT(gzip(big).size(), 1000u);
  EXPECT_EQ(static_cast<unsigned char>(gzip(big)[0]), 0x1f);  // the gzip magic
}
