// The metrics stage's aggregation (collector/metrics/aggregator.h) and its request parser: exact counts and
// bucket sums, the cardinality bound, exemplars, the formats; and the HTTP server against hostile clients.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <sstream>
#include <string>

#include "aggregator.h"
#include "http_request.h"
#include "server.h"
#include "stage.h"

using namespace txray;
using namespace txray::metrics;

namespace {

v1::Transaction& add_tx(v1::Batch& b, uint64_t txid, const std::string& name, uint64_t elapsed_ns, int status = 200,
                        const std::string& error = "") {
  auto* t = b.add_transactions();
  t->set_txid(txid);
  t->set_name(name);
  t->set_kind("http");
  t->set_elapsed_ns(elapsed_ns);
  t->set_start_unix_ns(1'700'000'000'000'000'000ull);
  t->set_cpu_ns(elapsed_ns / 2);
  t->set_sql_ns(elapsed_ns / 4);
  t->set_call_ns(elapsed_ns / 8);
  t->set_status(status);
  t->set_error(error);
  return *t;
}

v1::Batch batch(const std::string& app) {
  v1::Batch b;
  b.mutable_agent()->set_app(app);
  b.mutable_agent()->set_host("h1");
  b.set_sent_unix_ns(1'700'000'000'000'000'000ull);
  return b;
}

// The value of the sample line that starts with `prefix` (name and labels), or -1.
double sample(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix + " ", 0) == 0) return std::stod(line.substr(prefix.size() + 1));
  return -1;
}

}  // namespace

TEST(MetricsBuckets, BoundsAreInclusiveUpperBounds) {
  EXPECT_EQ(bucket_of(0), 0u);
  EXPECT_EQ(bucket_of(100'000), 0u);
  EXPECT_EQ(bucket_of(100'001), 1u);
  EXPECT_EQ(bucket_of(60'000'000'000ull), kBucketBoundsNs.size() - 1);
  EXPECT_EQ(bucket_of(60'000'000'001ull), kBuckets - 1);
}

TEST(MetricsCodes, Classes) {
  v1::Batch b = batch("a");
  EXPECT_EQ(code_class(add_tx(b, 1, "x", 1, 200)), k2xx);
  EXPECT_EQ(code_class(add_tx(b, 2, "x", 1, 404)), k4xx);
  EXPECT_EQ(code_class(add_tx(b, 3, "x", 1, 503, "boom")), k5xx);
  EXPECT_EQ(code_class(add_tx(b, 4, "x", 1, 0, "reset")), kError);
  EXPECT_EQ(code_class(add_tx(b, 5, "x", 1, 0)), k2xx);
  auto& p = add_tx(b, 6, "job", 1, 3);
  p.set_kind("process");
  EXPECT_EQ(code_class(p), kError);
}

TEST(MetricsAggregator, ExactCountsSumsAndBuckets) {
  Aggregator agg;
  v1::Batch b = batch("shop");
  // 10 fast (50 µs), 5 at 3 ms, 2 slow (2 s), 1 failed at 3 ms, 1 at 100 s (+Inf).
  uint64_t id = 1;
  for (int i = 0; i < 10; ++i) add_tx(b, id++, "GET /", 50'000);
  for (int i = 0; i < 5; ++i) add_tx(b, id++, "GET /", 3'000'000);
  for (int i = 0; i < 2; ++i) add_tx(b, id++, "GET /", 2'000'000'000);
  add_tx(b, id++, "GET /", 3'000'000, 500, "db down");
  add_tx(b, id++, "GET /", 100'000'000'000ull);
  // Head-sampled: 7 transactions in the wire bucket of [4096, 5120) ns, 30,000 ns in total.
  auto* sc = b.add_sampled_out();
  sc->set_name("GET /");
  sc->set_bucket(9);  // lo = (4 + 0) << (8 + 2) = 4096
  sc->set_count(7);
  sc->set_elapsed_ns(30'000);
  agg.add(b);
  agg.add(b);  // twice: every figure doubles exactly

  TxSeries s = agg.tx("shop", "GET /");
  EXPECT_EQ(s.count, 2u * 26);
  EXPECT_EQ(s.sampled_out, 14u);
  EXPECT_EQ(s.by_code[k2xx], 2u * 25);
  EXPECT_EQ(s.by_code[k5xx], 2u);
  EXPECT_EQ(s.buckets[0], 2u * 17);
  EXPECT_EQ(s.buckets[bucket_of(3'000'000)], 2u * 6);
  EXPECT_EQ(s.buckets[bucket_of(2'000'000'000)], 4u);
  EXPECT_EQ(s.buckets[kBuckets - 1], 2u);
  uint64_t elapsed = 10 * 50'000ull + 6 * 3'000'000ull + 2 * 2'000'000'000ull + 100'000'000'000ull + 30'000;
  EXPECT_EQ(s.elapsed_ns, 2 * elapsed);
  EXPECT_EQ(s.cpu_ns, 2 * (elapsed - 30'000) / 2);

  std::string text = agg.render(false);
  const std::string l = "{app=\"shop\",name=\"GET /\"";
  EXPECT_EQ(sample(text, "txray_requests_total" + l + ",code=\"2xx\"}"), 50);
  EXPECT_EQ(sample(text, "txray_requests_total" + l + ",code=\"5xx\"}"), 2);
  EXPECT_EQ(sample(text, "txray_request_duration_seconds_bucket" + l + ",le=\"0.0001\"}"), 34);
  EXPECT_EQ(sample(text, "txray_request_duration_seconds_bucket" + l + ",le=\"0.005\"}"), 46);
  EXPECT_EQ(sample(text, "txray_request_duration_seconds_bucket" + l + ",le=\"60\"}"), 50);
  EXPECT_EQ(sample(text, "txray_request_duration_seconds_bucket" + l + ",le=\"+Inf\"}"), 52);
  EXPECT_EQ(sample(text, "txray_request_duration_seconds_count" + l + "}"), 52);
  EXPECT_NEAR(sample(text, "txray_request_duration_seconds_sum" + l + "}"), 2 * elapsed / 1e9, 1e-9);
  EXPECT_EQ(text.find("# {txid="), std::string::npos) << "no exemplars in the text format";
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
}

TEST(MetricsAggregator, StepsPerFingerprintWithSummaries) {
  Aggregator agg;
  v1::Batch b = batch("shop");
  auto& t = add_tx(b, 1, "GET /", 1'000'000);
  for (int i = 0; i < 3; ++i) {
    auto* st = t.add_steps();
    st->set_kind(v1::SQL);
    st->set_fingerprint(0xabc);
    st->set_text("SELECT * FROM t WHERE id = ?");
    st->set_elapsed_ns(1000);
  }
  auto* su = t.add_summary();
  su->set_kind(v1::SQL);
  su->set_fingerprint(0xabc);
  su->set_count(40);
  su->set_elapsed_ns(40'000);
  su->set_errors(2);
  auto* call = t.add_steps();
  call->set_kind(v1::HTTP_CALL);
  call->set_fingerprint(0x77);
  call->set_text("GET http://inventory:8080/stock?id=42");
  call->set_elapsed_ns(5000);
  call->set_status(503);
  agg.add(b);
  std::string text = agg.render(false);
  std::string sql = "{app=\"shop\",fingerprint=\"0000000000000abc\",statement=\"SELECT * FROM t WHERE id = ?\"}";
  EXPECT_EQ(sample(text, "txray_sql_total" + sql), 43);
  EXPECT_NEAR(sample(text, "txray_sql_seconds_total" + sql), 43'000 / 1e9, 1e-12);
  EXPECT_EQ(sample(text, "txray_sql_errors_total" + sql), 2);
  std::string c = "{app=\"shop\",fingerprint=\"0000000000000077\",target=\"GET http://inventory:8080/stock\"}";
  EXPECT_EQ(sample(text, "txray_calls_total" + c), 1);
  EXPECT_EQ(sample(text, "txray_calls_errors_total" + c), 1);
}

TEST(MetricsAggregator, CardinalityBoundWith100000Names) {
  MetricsLimits lim;
  lim.max_names = 1000;
  lim.max_sql = 50;
  Aggregator agg(lim);
  uint64_t id = 1;
  for (int k = 0; k < 100; ++k) {
    v1::Batch b = batch("crawler");
    for (int i = 0; i < 1000; ++i) {
      auto& t = add_tx(b, id, "GET /item/" + std::to_string(id), 1'000'000);
      auto* st = t.add_steps();
      st->set_kind(v1::SQL);
      st->set_fingerprint(id);
      st->set_text("SELECT " + std::to_string(id));
      st->set_elapsed_ns(10);
      ++id;
    }
    agg.add(b);
  }
  EXPECT_EQ(agg.name_series(), 1001u) << "1000 named + other";
  EXPECT_EQ(agg.sql_series(), 51u);
  TxSeries other = agg.tx("crawler", "other");
  EXPECT_EQ(other.count, 99'000u) << "the overflow is counted, not lost";
  std::string text = agg.render(false);
  EXPECT_EQ(sample(text, "txray_metrics_overflow_total{app=\"crawler\",kind=\"name\"}"), 99'000);
  EXPECT_EQ(sample(text, "txray_metrics_overflow_total{app=\"crawler\",kind=\"sql\"}"), 99'950);
  std::set<std::string> names;
  std::istringstream in(text);
  std::string line;
  size_t lines = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++lines;
    size_t p = line.find("name=\"");
    if (p != std::string::npos) names.insert(line.substr(p, line.find('"', p + 6) - p));
  }
  EXPECT_EQ(names.size(), 1001u);
  // Every (app, name) has at most 1 + 6 + 21 + 6 samples; statements 3 each.
  EXPECT_LE(lines, 1001u * 34 + 51 * 3 + 10);
}

TEST(MetricsAggregator, AppsBounded) {
  MetricsLimits lim;
  lim.max_apps = 3;
  Aggregator agg(lim);
  for (int i = 0; i < 10; ++i) {
    v1::Batch b = batch("app" + std::to_string(i));
    add_tx(b, i + 1, "GET /", 1000);
    agg.add(b);
  }
  EXPECT_EQ(agg.tx("other", "GET /").count, 7u);
}

TEST(MetricsAggregator, OpenMetricsExemplarsCarryTheLatestTxid) {
  Aggregator agg;
  v1::Batch b = batch("shop");
  add_tx(b, 0x1111, "GET /", 3'000'000);
  add_tx(b, 0x2222, "GET /", 4'000'000);  // same bucket (<= 5 ms): the latest one is the exemplar
  add_tx(b, 0x3333, "GET /", 2'000'000'000);
  agg.add(b);
  std::string om = agg.render(true);
  const std::string l = "txray_request_duration_seconds_bucket{app=\"shop\",name=\"GET /\"";
  EXPECT_NE(om.find(l + ",le=\"0.005\"} 2 # {txid=\"0000000000002222\"} 0.004000000\n"), std::string::npos) << om;
  EXPECT_NE(om.find(l + ",le=\"2.5\"} 3 # {txid=\"0000000000003333\"} 2.000000000\n"), std::string::npos);
  EXPECT_EQ(om.find("0000000000001111"), std::string::npos);
  EXPECT_NE(om.find("# TYPE txray_requests counter\n"), std::string::npos) << "OpenMetrics family names drop _total";
  EXPECT_NE(om.find("txray_requests_total{"), std::string::npos);
  EXPECT_TRUE(om.ends_with("# EOF\n"));
  EXPECT_NE(agg.render(false).find("# TYPE txray_requests_total counter\n"), std::string::npos);
}

TEST(MetricsAggregator, LabelsEscapedAndValidUtf8) {
  Aggregator agg;
  v1::Batch b = batch("a\"b");
  add_tx(b, 1, std::string("GET /\\x\n\xff", 9), 1000);
  agg.add(b);
  std::string text = agg.render(false);
  EXPECT_NE(text.find("txray_requests_total{app=\"a\\\"b\",name=\"GET /\\\\x\\n?\",code=\"2xx\"} 1"), std::string::npos)
      << text;
}

TEST(MetricsHttp, ParsesScrapes) {
  auto r = parse_request(
      "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n");
  ASSERT_EQ(r.status, ParseStatus::kOk);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_TRUE(r.openmetrics);
  EXPECT_FALSE(parse_request("GET /metrics HTTP/1.0\r\n\r\n").openmetrics);
  EXPECT_EQ(parse_request("GET /metrics HTTP/1.1\r\nHost: a\r\n").status, ParseStatus::kIncomplete);
  EXPECT_EQ(parse_request("\x16\x03\x01").status, ParseStatus::kBad);
  EXPECT_EQ(parse_request("GET /metrics HTTP/2\r\n\r\n").status, ParseStatus::kBad);
  EXPECT_EQ(parse_request("GET metrics HTTP/1.1\r\n\r\n").status, ParseStatus::kBad);
  EXPECT_EQ(parse_request("GET / HTTP/1.1\r\nno colon\r\n\r\n").status, ParseStatus::kBad);
  EXPECT_EQ(parse_request("GET /" + std::string(9000, 'a')).status, ParseStatus::kTooLarge);
  std::string body_called;
  auto resp = respond(parse_request("POST /metrics HTTP/1.1\r\n\r\n"), [&](bool) { return body_called = "x"; });
  EXPECT_EQ(resp.rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_TRUE(body_called.empty());
}

TEST(MetricsListen, LoopbackUnlessAllowed) {
  uint32_t a;
  uint16_t p;
  std::string why;
  EXPECT_TRUE(parse_listen("127.0.0.1:9464", false, &a, &p, &why));
  EXPECT_EQ(p, 9464);
  EXPECT_TRUE(parse_listen("localhost:0", false, &a, &p, &why));
  EXPECT_FALSE(parse_listen("0.0.0.0:9464", false, &a, &p, &why));
  EXPECT_NE(why.find("--metrics-allow-remote"), std::string::npos);
  EXPECT_TRUE(parse_listen("0.0.0.0:9464", true, &a, &p, &why));
  EXPECT_FALSE(parse_listen("127.0.0.1", false, &a, &p, &why));
  EXPECT_FALSE(parse_listen("127.0.0.1:99999", false, &a, &p, &why));
  EXPECT_FALSE(parse_listen("host:1", false, &a, &p, &why));
}

namespace {
int connect_to(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  return fd;
}
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 10000) > 0) {  // bounded: the server's deadline is far shorter
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}
}  // namespace

TEST(MetricsServer, StalledAndHostileClientsDoNotBlockAScrape) {
  Server srv;
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.deadline = std::chrono::milliseconds(1000);
  std::string why;
  ASSERT_TRUE(srv.start(o, [](bool om) { return std::string(om ? "om\n" : "text\n"); }, &why)) << why;
  // Connections that send half a request and stall, and one that sends garbage without end.
  std::vector<int> stalled;
  for (int i = 0; i < 5; ++i) {
    int fd = connect_to(srv.port());
    (void)!write(fd, "GET /metr", 9);
    stalled.push_back(fd);
  }
  int flood = connect_to(srv.port());
  std::string junk(20000, 'A');
  (void)!write(flood, junk.data(), junk.size());
  int fd = connect_to(srv.port());
  std::string req = "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text\r\n\r\n";
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string resp = read_all(fd);
  EXPECT_EQ(resp.rfind("HTTP/1.1 200 OK", 0), 0u) << resp;
  EXPECT_TRUE(resp.ends_with("\r\n\r\nom\n"));
  close(fd);
  EXPECT_EQ(read_all(flood).rfind("HTTP/1.1 4", 0), 0u) << "too large or bad: answered with an error";
  close(flood);
  for (int s : stalled) {  // the deadline closes them
    EXPECT_EQ(read_all(s), "");
    close(s);
  }
  EXPECT_EQ(srv.requests(), 1u);
  EXPECT_GE(srv.refused(), 6u);
  srv.stop();
}

namespace {
struct CountingTap : ingest::BatchTap {
  int offers = 0, finishes = 0;
  void offer(const void*, size_t, const v1::Batch&) override { ++offers; }
  std::string status() const override { return ", next: ok"; }
  void finish(std::chrono::milliseconds) override { ++finishes; }
};
}  // namespace

TEST(MetricsStage, HandsEveryBatchOnAndShowsTheCollectorsHealth) {
  CountingTap next;
  ingest::CollectStats stats;
  stats.received_tx = 10;
  stats.stored_tx = 6;
  stats.shed_tx = 3;
  stats.malformed = 2;
  stats.disk_full_since_ns = 5;
  MetricsStage stage(MetricsLimits{}, &stats, &next);
  v1::Batch b = batch("shop");
  add_tx(b, 1, "GET /", 1000);
  stage.offer("x", 1, b);
  stage.offer("x", 1, b);
  stage.finish(std::chrono::milliseconds(1));
  EXPECT_EQ(next.offers, 2);
  EXPECT_EQ(next.finishes, 1);
  EXPECT_EQ(stage.status(), ", next: ok");
  for (bool om : {false, true}) {
    std::string text = stage.render(om);
    EXPECT_EQ(sample(text, "txray_requests_total{app=\"shop\",name=\"GET /\",code=\"2xx\"}"), 2);
    EXPECT_EQ(sample(text, "txray_collector_received_transactions_total"), 10);
    EXPECT_EQ(sample(text, "txray_collector_shed_transactions_total"), 3);
    EXPECT_EQ(sample(text, "txray_collector_store_lag_transactions"), 1);
    EXPECT_EQ(sample(text, "txray_collector_disk_full"), 1);
    EXPECT_EQ(sample(text, "txray_collector_rejected_messages_total{reason=\"malformed\"}"), 2);
    EXPECT_EQ(text.find("# TYPE txray_collector_received_transactions counter") != std::string::npos, om);
    EXPECT_EQ(text.ends_with("# EOF\n"), om);
  }
}
