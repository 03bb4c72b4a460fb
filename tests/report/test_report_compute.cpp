// compute_report over a store with known content: every count, sum, percentile and group exactly.
#include <gtest/gtest.h>

#include <map>

#include "compute.h"
#include "stats.h"
#include "store_fixture.h"

using namespace txray::report;
using namespace txray::report::testing;

namespace {

constexpr int64_t kFpOrder = 0x111, kFpItems = 0x222;

// 20 transactions:
//   shop  "GET /orders" x10, elapsed 10..100 ms, cpu 2, one SQL (fp 0x111, 1 ms, 3 rows) each;
//         the 100 ms one also runs fp 0x222 six times (5 ms, 1 row each)      -> N+1 by steps
//         the  90 ms one has fp 0x222 folded: 5 calls, 25 ms, 5 rows          -> N+1 by summary
//   shop  "GET /users" x5, 5 ms, cpu 1; one fails with error "boom"
//   shop  "POST /pay" 300 ms, cpu 10: one HTTP_CALL 250 ms (200) + 4 folded calls 40 ms, same target
//   billing "POST /charge" x4, 50 ms, cpu 20; one answers 503 without an error text
class ComputeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const int64_t shop = s.agent("shop"), billing = s.agent("billing");
    for (int k = 1; k <= 10; ++k) {
      StoreBuilder::Tx t;
      t.agent = shop;
      t.name = "GET /orders";
      t.start_ms = k * 1000;
      t.elapsed_ms = k * 10;
      t.cpu_ms = 2;
      t.sql_ms = 1 + (k == 9 ? 25 : 0) + (k == 10 ? 30 : 0);
      const int64_t id = s.tx(t);
      if (k == 1) first_orders = id;
      s.step(id, {.no = 0, .kind = "START"});
      s.step(id, {.no = 1, .kind = "SQL", .start_ms = 1, .gap_ms = 1, .elapsed_ms = 1,
                  .text = "SELECT * FROM orders WHERE id = ?", .fingerprint = kFpOrder, .rows = 3, .status = 0});
      int no = 2;
      if (k == 10)
        for (int i = 0; i < 6; ++i, ++no)
          s.step(id, {.no = no, .kind = "SQL", .start_ms = 2 + i * 5, .gap_ms = i ? 5 : 1, .elapsed_ms = 5,
                      .text = "SELECT * FROM items WHERE order_id = ?", .fingerprint = kFpItems, .rows = 1});
      if (k == 9) s.summary(id, "SQL", kFpItems, "SELECT * FROM items WHERE order_id = ?", 5, 25, 5);
      s.step(id, {.no = no, .kind = "END", .start_ms = k * 10});
    }
    for (int k = 0; k < 5; ++k) {
      StoreBuilder::Tx t;
      t.agent = shop;
      t.name = "GET /users";
      t.start_ms = 20'000 + k * 1000;
      t.elapsed_ms = 5;
      t.cpu_ms = 1;
      if (k == 2) t.error = "boom", t.status = 500;
      s.tx(t);
    }
    {
      StoreBuilder::Tx t;
      t.agent = shop;
      t.name = "POST /pay";
      t.start_ms = 30'000;
      t.elapsed_ms = 300;
      t.cpu_ms = 10;
      t.call_ms = 290;
      pay = s.tx(t);
      s.step(pay, {.no = 0, .kind = "START"});
      s.step(pay, {.no = 1, .kind = "HTTP_CALL", .start_ms = 5, .gap_ms = 5, .elapsed_ms = 250,
                   .text = "POST http://billing:8080/charge?order=1", .status = 200});
      s.summary(pay, "HTTP_CALL", std::nullopt, "POST http://billing:8080/charge?order=2", 4, 40, std::nullopt);
      // 10 ms of CPU over the 295 ms before END, 250 ms of which lie inside the call
      s.step(pay, {.no = 2, .kind = "END", .start_ms = 300, .gap_ms = 295, .cpu_ms = 10});
    }
    for (int k = 0; k < 4; ++k) {
      StoreBuilder::Tx t;
      t.agent = billing;
      t.app = "billing";
      t.name = "POST /charge";
      t.start_ms = 30'010 + k * 100;
      t.elapsed_ms = 50;
      t.cpu_ms = 20;
      if (k == 3) t.status = 503;
      s.tx(t);
    }
    db = s.done();
  }

  Report run(Options opt = {}) {
    opt.db = db;
    Report r;
    std::string err = compute_report(opt, r);
    EXPECT_EQ(err, "");
    return r;
  }

  StoreBuilder s;
  std::string db;
  int64_t first_orders = 0, pay = 0;
};

TEST_F(ComputeTest, SummaryCountsPercentilesAndShares) {
  Report r = run();
  const Summary& m = r.summary;
  EXPECT_EQ(m.transactions, 20);
  EXPECT_EQ(m.errors, 2);  // "boom" and the 503
  EXPECT_DOUBLE_EQ(m.error_rate, 0.1);
  // sorted: 5 x5, 10, 20, 30, 40, 50 x5, 60, 70, 80, 90, 100, 300  (sum 1075)
  EXPECT_EQ(m.pct.p50, 50 * kMs);
  EXPECT_EQ(m.pct.p90, 90 * kMs);
  EXPECT_EQ(m.pct.p95, 100 * kMs);
  EXPECT_EQ(m.pct.p99, 300 * kMs);
  EXPECT_EQ(m.pct.max, 300 * kMs);
  EXPECT_EQ(m.avg_ns, 1075 * kMs / 20);
  EXPECT_EQ(m.cpu_total_ns, (10 * 2 + 5 * 1 + 10 + 4 * 20) * kMs);
  EXPECT_EQ(m.shares.total_ns, 1075 * kMs);
  EXPECT_EQ(m.shares.sql_ns, 65 * kMs);
  // The pay transaction's own CPU inside its call (10 ms x 250/295) moves from call to CPU; its CPU was
  // already all counted (10 ms fit outside the call), so that time becomes waiting.
  const int64_t in_call = 10 * kMs * 250 / 295;
  EXPECT_EQ(m.shares.call_ns, 290 * kMs - in_call);
  EXPECT_EQ(m.shares.cpu_ns, 115 * kMs);
  EXPECT_EQ(m.shares.fetch_ns, 0);
  EXPECT_EQ(m.shares.wait_ns, 605 * kMs + in_call);
  EXPECT_EQ(m.first_start_unix_ns, kBase + 1000 * kMs);
  EXPECT_EQ(m.last_end_unix_ns, kBase + 30'360 * kMs);  // the last charge
  EXPECT_NEAR(m.throughput_per_s, 20.0 / 29.36, 1e-9);
  EXPECT_EQ(m.apps, (std::vector<std::string>{"billing", "shop"}));
}

TEST_F(ComputeTest, NamesRankedByTotalTime) {
  Report r = run();
  ASSERT_EQ(r.names.size(), 4u);
  EXPECT_EQ(r.name_groups, 4);
  EXPECT_EQ(r.names[0].name, "GET /orders");
  EXPECT_EQ(r.names[0].count, 10);
  EXPECT_EQ(r.names[0].total_ns, 550 * kMs);
  EXPECT_EQ(r.names[0].avg_ns, 55 * kMs);
  EXPECT_EQ(r.names[0].p95_ns, 100 * kMs);
  EXPECT_EQ(r.names[0].max_ns, 100 * kMs);
  EXPECT_DOUBLE_EQ(r.names[0].share, 550.0 / 1075.0);
  EXPECT_EQ(r.names[1].name, "POST /pay");
  EXPECT_EQ(r.names[2].name, "POST /charge");
  EXPECT_EQ(r.names[2].app, "billing");
  EXPECT_EQ(r.names[2].errors, 1);
  EXPECT_EQ(r.names[3].name, "GET /users");
  EXPECT_EQ(r.names[3].errors, 1);
  EXPECT_EQ(r.names[3].total_ns, 25 * kMs);

  Options top2;
  top2.top = 2;
  Report cut = run(top2);
  EXPECT_EQ(cut.names.size(), 2u);
  EXPECT_EQ(cut.name_groups, 4);
  EXPECT_EQ(cut.slowest.size(), 2u);
}

TEST_F(ComputeTest, SqlByFingerprintIncludesFoldedCalls) {
  Report r = run();
  ASSERT_EQ(r.sql.size(), 2u);
  EXPECT_EQ(r.sql_groups, 2);
  const CallGroup& items = r.sql[0];  // 55 ms beats 10 ms
  EXPECT_EQ(items.key, hex16(kFpItems));
  EXPECT_EQ(items.calls, 11);
  EXPECT_EQ(items.summarized, 5);
  EXPECT_EQ(items.total_ns, 55 * kMs);
  EXPECT_EQ(items.avg_ns, 5 * kMs);
  EXPECT_EQ(items.p95_ns, 5 * kMs);
  EXPECT_EQ(items.max_ns, 5 * kMs);
  EXPECT_EQ(items.rows, 11);
  EXPECT_EQ(items.transactions, 2);
  EXPECT_DOUBLE_EQ(items.share, 55.0 / 65.0);
  EXPECT_EQ(items.example, "SELECT * FROM items WHERE order_id = ?");
  const CallGroup& orders = r.sql[1];
  EXPECT_EQ(orders.calls, 10);
  EXPECT_EQ(orders.summarized, 0);
  EXPECT_EQ(orders.total_ns, 10 * kMs);
  EXPECT_EQ(orders.rows, 30);
  EXPECT_EQ(orders.transactions, 10);
}

TEST_F(ComputeTest, CallsByHostAndPathWithStatuses) {
  Report r = run();
  ASSERT_EQ(r.calls.size(), 1u);
  const CallGroup& c = r.calls[0];
  EXPECT_EQ(c.host, "billing:8080");
  EXPECT_EQ(c.path, "/charge");
  EXPECT_EQ(c.calls, 5);
  EXPECT_EQ(c.summarized, 4);
  EXPECT_EQ(c.total_ns, 290 * kMs);
  EXPECT_EQ(c.avg_ns, 58 * kMs);
  EXPECT_EQ(c.max_ns, 250 * kMs);
  EXPECT_EQ(c.statuses, (std::map<int, int64_t>{{200, 1}}));
  EXPECT_EQ(c.transactions, 1);
}

TEST_F(ComputeTest, RepeatedCallsFoundByStepsAndSummaries) {
  Report r = run();
  ASSERT_EQ(r.repeated.size(), 2u);
  EXPECT_EQ(r.repeated_groups, 2);
  const RepeatRow& call = r.repeated[0];  // 290 ms first
  EXPECT_EQ(call.kind, "HTTP_CALL");
  EXPECT_EQ(call.transactions, 1);
  EXPECT_EQ(call.executions, 5);
  EXPECT_EQ(call.total_ns, 290 * kMs);
  ASSERT_EQ(call.worst.size(), 1u);
  EXPECT_EQ(call.worst[0].id, pay);
  EXPECT_EQ(call.worst[0].txid, 0x1000 + pay);
  EXPECT_EQ(call.worst[0].name, "POST /pay");
  const RepeatRow& sql = r.repeated[1];
  EXPECT_EQ(sql.kind, "SQL");
  EXPECT_EQ(sql.key, hex16(kFpItems));
  EXPECT_EQ(sql.transactions, 2);
  EXPECT_EQ(sql.executions, 11);
  EXPECT_EQ(sql.max_per_tx, 6);
  EXPECT_EQ(sql.total_ns, 55 * kMs);
  ASSERT_EQ(sql.worst.size(), 2u);
  EXPECT_EQ(sql.worst[0].count, 6);
  EXPECT_EQ(sql.worst[0].elapsed_ns, 100 * kMs);
  EXPECT_EQ(sql.worst[1].count, 5);

  Options k6;
  k6.repeat_threshold = 6;  // only the 6-times transaction qualifies
  Report r6 = run(k6);
  ASSERT_EQ(r6.repeated.size(), 1u);
  EXPECT_EQ(r6.repeated[0].kind, "SQL");
  EXPECT_EQ(r6.repeated[0].transactions, 1);
  EXPECT_EQ(r6.repeated[0].executions, 6);
  Options k7;
  k7.repeat_threshold = 7;
  EXPECT_TRUE(run(k7).repeated.empty());
}

TEST_F(ComputeTest, SlowestCarryDominantCost) {
  Report r = run();
  ASSERT_EQ(r.slowest.size(), 20u);
  EXPECT_EQ(r.slowest[0].name, "POST /pay");
  EXPECT_EQ(r.slowest[0].dominant, Cost::Call);
  EXPECT_EQ(r.slowest[0].dominant_ns, 290 * kMs - 10 * kMs * 250 / 295);
  EXPECT_EQ(r.slowest[0].step_no, 1);
  EXPECT_NE(r.slowest[0].step.find("x5"), std::string::npos) << r.slowest[0].step;
  EXPECT_EQ(r.slowest[1].elapsed_ns, 100 * kMs);
  // ties (the five 50 ms orders/charges) in id order
  for (size_t i = 1; i < r.slowest.size(); ++i) {
    EXPECT_GE(r.slowest[i - 1].elapsed_ns, r.slowest[i].elapsed_ns);
    if (r.slowest[i - 1].elapsed_ns == r.slowest[i].elapsed_ns) {
      EXPECT_LT(r.slowest[i - 1].id, r.slowest[i].id);
    }
  }
}

TEST_F(ComputeTest, HistogramCountsEveryTransaction) {
  Report r = run();
  int64_t n = 0;
  for (const auto& b : r.histogram) n += b.count;
  EXPECT_EQ(n, 20);
  ASSERT_FALSE(r.histogram.empty());
  EXPECT_EQ(r.histogram.front().lo_ns, 5 * kMs);   // [5, 10): the five 5 ms users
  EXPECT_EQ(r.histogram.front().count, 5);
  EXPECT_EQ(r.histogram.back().lo_ns, 200 * kMs);  // [200, 500): the 300 ms pay
  EXPECT_EQ(r.histogram.back().count, 1);
  int64_t cells = 0;
  for (const auto& c : r.scatter.cells) cells += c.count;
  EXPECT_EQ(cells, 20);
}

TEST_F(ComputeTest, Filters) {
  Options app;
  app.app = "billing";
  EXPECT_EQ(run(app).summary.transactions, 4);
  Options name;
  name.name = "orders";
  Report rn = run(name);
  EXPECT_EQ(rn.summary.transactions, 10);
  EXPECT_EQ(rn.calls.size(), 0u);
  EXPECT_EQ(rn.repeated.size(), 1u);
  Options slow;
  slow.min_ms = 50;
  EXPECT_EQ(run(slow).summary.transactions, 11);
  Options window;  // ends from 10:00:30 on: pay and the four charges
  window.since_unix_ns = kBase + 30'000 * kMs;
  EXPECT_EQ(run(window).summary.transactions, 5);
  window.until_unix_ns = kBase + 30'060 * kMs;  // inclusive: the first charge ends at 30,060
  EXPECT_EQ(run(window).summary.transactions, 1);
  Options ids;
  ids.tx_ids = {first_orders, pay, pay, 999'999};
  Report ri = run(ids);
  EXPECT_EQ(ri.summary.transactions, 2);
  EXPECT_EQ(ri.sql.size(), 1u);  // only the orders statement of the first order
  EXPECT_EQ(ri.calls.size(), 1u);
  ids.app = "billing";  // the other filters still apply
  EXPECT_EQ(run(ids).summary.transactions, 0);
}

TEST_F(ComputeTest, NoMatchIsAnEmptyReport) {
  Options none;
  none.name = "nothing matches this";
  Report r = run(none);
  EXPECT_EQ(r.summary.transactions, 0);
  EXPECT_TRUE(r.slowest.empty());
  EXPECT_TRUE(r.histogram.empty());
  EXPECT_TRUE(r.sql.empty());
}

TEST(ComputeErrors, MissingStoreNotAStoreAndBadOptions) {
  Report r;
  Options o;
  o.db = "/nonexistent/dir/x.db";
  EXPECT_NE(compute_report(o, r).find("cannot open store"), std::string::npos);
  {
    StoreBuilder b;
    b.exec("DROP TABLE steps");
    o.db = b.done();
    EXPECT_NE(compute_report(o, r).find("not a txray store"), std::string::npos);
  }
  {
    StoreBuilder b;
    b.exec("UPDATE meta SET value = '9' WHERE key = 'schema_version'");
    o.db = b.done();
    EXPECT_NE(compute_report(o, r).find("schema version '9'"), std::string::npos);
  }
  Options bad;
  bad.db = "x";
  bad.top = 0;
  EXPECT_NE(validate_options(bad), "");
  bad.top = 5;
  bad.format = "pdf";
  EXPECT_NE(validate_options(bad).find("unknown format"), std::string::npos);
  bad.format = "csv";
  bad.table = "nope";
  EXPECT_NE(validate_options(bad).find("unknown table"), std::string::npos);
  bad.table = "sql";
  EXPECT_EQ(validate_options(bad), "");
  bad.since_unix_ns = 2;
  bad.until_unix_ns = 1;
  EXPECT_NE(validate_options(bad).find("--since is after --until"), std::string::npos);
  bad.until_unix_ns = 2;  // one instant is a valid window
  EXPECT_EQ(validate_options(bad), "");
  bad.repeat_threshold = 1;
  EXPECT_NE(validate_options(bad).find("--repeat"), std::string::npos);
}

}  // namespace

// Unattributed containers (kind "unattributed") are no transactions: none of their rows shows in any
// figure; the summary counts their steps instead, under the app and time filters (a step's own start).
TEST(ComputeUnattributed, ContainersAreLeftOutAndTheirStepsCounted) {
  StoreBuilder s;
  const int64_t front = s.agent("front"), back = s.agent("back");
  StoreBuilder::Tx t;
  t.agent = front;
  t.app = "front";
  t.name = "GET /r/1";
  t.start_ms = 1000;
  t.elapsed_ms = 10;
  t.call_ms = 5;
  const int64_t r1 = s.tx(t);
  s.step(r1, {.no = 0, .kind = "START"});
  s.step(r1, {.no = 1, .kind = "HTTP_CALL", .start_ms = 1, .gap_ms = 1, .elapsed_ms = 5,
              .text = "GET http://back:8080/b/1", .status = 200});
  s.step(r1, {.no = 2, .kind = "END", .start_ms = 10, .gap_ms = 9});
  // front's container: from 2000 ms, 1 s long, slower than anything, with calls and SQL of its own.
  StoreBuilder::Tx c;
  c.agent = front;
  c.app = "front";
  c.name = "unattributed steps";
  c.kind = "unattributed";
  c.start_ms = 2000;
  c.elapsed_ms = 1000;
  c.sql_ms = 3;
  c.call_ms = 12;
  c.status = 0;
  c.error = "x";
  const int64_t ca = s.tx(c);
  s.step(ca, {.no = 0, .kind = "START"});
  s.step(ca, {.no = 1, .kind = "HTTP_CALL", .start_ms = 100, .gap_ms = 100, .elapsed_ms = 6,
              .text = "GET http://back:8080/b/2", .status = 200});
  s.step(ca, {.no = 2, .kind = "HTTP_CALL", .start_ms = 600, .gap_ms = 500, .elapsed_ms = 6,
              .text = "GET http://back:8080/b/3", .status = 200});
  s.step(ca, {.no = 3, .kind = "SOCKET", .start_ms = 700, .gap_ms = 100});
  for (int i = 0; i < 6; ++i)  // would be an N+1 pattern in a transaction
    s.step(ca, {.no = 4 + i, .kind = "SQL", .start_ms = 800 + i, .gap_ms = 1, .elapsed_ms = 0,
                .text = "SELECT 1", .fingerprint = 0x77, .rows = 1});
  s.step(ca, {.no = 10, .kind = "END", .start_ms = 1000, .gap_ms = 194});
  s.summary(ca, "HTTP_CALL", std::nullopt, "GET http://back:8080/b/4", 40, 100, std::nullopt);
  // back's container, without a kind filter it would be a second app.
  StoreBuilder::Tx cb = c;
  cb.agent = back;
  cb.app = "back";
  cb.start_ms = 5000;
  const int64_t cbid = s.tx(cb);
  s.step(cbid, {.no = 0, .kind = "START"});
  s.step(cbid, {.no = 1, .kind = "DNS", .start_ms = 1, .gap_ms = 1, .elapsed_ms = 1, .text = "db"});
  s.step(cbid, {.no = 2, .kind = "END", .start_ms = 1000, .gap_ms = 999});
  const std::string db = s.done();

  auto run = [&](Options opt) {
    opt.db = db;
    Report r;
    EXPECT_EQ(compute_report(opt, r), "");
    return r;
  };
  Report r = run({});
  EXPECT_EQ(r.summary.transactions, 1);
  EXPECT_EQ(r.summary.errors, 0);
  EXPECT_EQ(r.summary.pct.max, 10 * kMs);
  EXPECT_EQ(r.summary.last_end_unix_ns, kBase + 1010 * kMs);
  EXPECT_EQ(r.summary.apps, (std::vector<std::string>{"front"}));
  EXPECT_EQ(r.summary.shares.total_ns, 10 * kMs);
  ASSERT_EQ(r.slowest.size(), 1u);
  EXPECT_EQ(r.slowest[0].id, r1);
  ASSERT_EQ(r.names.size(), 1u);
  EXPECT_EQ(r.names[0].name, "GET /r/1");
  EXPECT_TRUE(r.sql.empty());
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].calls, 1);
  EXPECT_TRUE(r.repeated.empty());
  int64_t in_histogram = 0;
  for (const auto& b : r.histogram) in_histogram += b.count;
  EXPECT_EQ(in_histogram, 1);
  int64_t in_scatter = 0;
  for (const auto& cell : r.scatter.cells) in_scatter += cell.count;
  EXPECT_EQ(in_scatter, 1);

  EXPECT_EQ(r.summary.unattributed_steps, 2 + 40 + 1 + 6 + 1);
  EXPECT_EQ(r.summary.unattributed_by_kind,
            (std::map<std::string, int64_t>{{"DNS", 1}, {"HTTP_CALL", 42}, {"SOCKET", 1}, {"SQL", 6}}));

  Options o;
  o.app = "back";
  Report rb = run(o);
  EXPECT_EQ(rb.summary.transactions, 0);
  EXPECT_EQ(rb.summary.unattributed_steps, 1);

  // Time: the step's own start. [2100, 2650] ms holds front's two calls; folded ones count at their
  // container's start (2000 ms), outside the window.
  o = {};
  o.since_unix_ns = kBase + 2100 * kMs;
  o.until_unix_ns = kBase + 2650 * kMs;
  Report rt = run(o);
  EXPECT_EQ(rt.summary.unattributed_by_kind, (std::map<std::string, int64_t>{{"HTTP_CALL", 2}}));
  o.since_unix_ns = kBase + 2000 * kMs;
  EXPECT_EQ(run(o).summary.unattributed_by_kind.at("HTTP_CALL"), 42);
  // --name and --min-ms select transactions; they leave the unattributed steps alone.
  o = {};
  o.name = "nothing like it";
  o.min_ms = 5000;
  EXPECT_EQ(run(o).summary.unattributed_steps, 50);
}
