// Shed and sampled-out transactions (shed_counts) in the report: the merged percentiles, and
// compute_report's count, mean, throughput, percentiles and names table over stored + counted ones.
#include <gtest/gtest.h>

#include "compute.h"
#include "shed.h"
#include "store_fixture.h"

using namespace txray::report;
using namespace txray::report::testing;

namespace {

TEST(MergedPercentiles, WeightedValuesCountAsManyValues) {
  std::vector<int64_t> exact{100, 200};
  std::vector<std::pair<int64_t, int64_t>> weighted{{10, 97}, {150, 1}};
  // 100 values: 97 x 10, 100, 150, 200.
  Percentiles p = merged_percentiles(exact, weighted);
  EXPECT_EQ(p.p50, 10);
  EXPECT_EQ(p.p90, 10);
  EXPECT_EQ(p.p95, 10);
  EXPECT_EQ(p.p99, 150);
  EXPECT_EQ(p.max, 200);
  // With nothing weighted it is the plain nearest rank.
  std::vector<int64_t> v{5, 1, 4, 2, 3};
  Percentiles q = merged_percentiles(v, {});
  EXPECT_EQ(q.p50, 3);
  EXPECT_EQ(q.max, 5);
  std::vector<int64_t> none;
  Percentiles w = merged_percentiles(none, {{7, 3}});
  EXPECT_EQ(w.p50, 7);
  EXPECT_EQ(w.max, 7);
}

// 10 stored "GET /a" of 100..1000 ms over 9 s, and 90 shed "GET /a" of 10 ms (two origins), plus 5
// sampled-out "GET /b" (no stored one) of 20 ms, in the same minute.
class ShedReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const int64_t shop = s.agent("shop");
    for (int k = 1; k <= 10; ++k) {
      StoreBuilder::Tx t;
      t.agent = shop;
      t.name = "GET /a";
      t.start_ms = (k - 1) * 1000 - k * 100 + 1000;  // ends at 1 s .. 10 s
      t.elapsed_ms = k * 100;
      s.tx(t);
    }
    const int64_t minute = kBase / 60'000'000'000 * 60'000'000'000;
    auto shed = [&](const std::string& name, const std::string& origin, int bucket, int64_t count, int64_t ms) {
      s.exec("INSERT INTO shed_counts VALUES ('shop', " + StoreBuilder::q(name) + ", 'http', " + std::to_string(minute) +
             ", " + StoreBuilder::q(origin) + ", " + std::to_string(bucket) + ", " + std::to_string(count) + ", " +
             std::to_string(count * ms * kMs) + ")");
    };
    shed("GET /a", "collector", 50, 60, 10);
    shed("GET /a", "agent", 50, 30, 10);
    shed("GET /b", "agent", 55, 5, 20);
    path = s.done();
  }
  StoreBuilder s;
  std::string path;
};

TEST_F(ShedReportTest, CountsMeanThroughputPercentilesAndNamesIncludeThem) {
  Options opt;
  opt.db = path;
  Report r;
  ASSERT_EQ(compute_report(opt, r), "");
  const Summary& sm = r.summary;
  EXPECT_EQ(sm.transactions, 105);
  EXPECT_EQ(sm.shed_transactions, 95);
  EXPECT_EQ(sm.shed_by_origin.at("collector"), 60);
  EXPECT_EQ(sm.shed_by_origin.at("agent"), 35);
  // (5,500 + 900 + 100) ms / 105
  EXPECT_EQ(sm.avg_ns, (5500 + 900 + 100) * kMs / 105);
  // 105 values: 90 x 10 ms, 5 x 20 ms, then 100..1000 ms.
  EXPECT_EQ(sm.pct.p50, 10 * kMs);
  EXPECT_EQ(sm.pct.p90, 20 * kMs);   // rank 95
  EXPECT_EQ(sm.pct.p95, 500 * kMs);  // rank 100 (ranks 96..105 are 100..1000 ms)
  EXPECT_EQ(sm.pct.p99, 900 * kMs);  // rank 104
  EXPECT_EQ(sm.pct.max, 1000 * kMs);
  // Throughput: all 105 over the stored transactions' window (first start 0.9 s .. last end 10 s).
  const double span_s = (sm.last_end_unix_ns - sm.first_start_unix_ns) / 1e9;
  EXPECT_NEAR(sm.throughput_per_s, 105 / span_s, 1e-6);
  ASSERT_EQ(r.names.size(), 2u);
  EXPECT_EQ(r.names[0].name, "GET /a");
  EXPECT_EQ(r.names[0].count, 100);
  EXPECT_EQ(r.names[0].shed, 90);
  EXPECT_EQ(r.names[0].total_ns, (5500 + 900) * kMs);
  EXPECT_EQ(r.names[1].name, "GET /b");
  EXPECT_EQ(r.names[1].count, 5);
  EXPECT_EQ(r.names[1].p95_ns, 20 * kMs);
  // Filters apply to them: an app with none, a name, a minimum response time.
  opt.name = "/b";
  Report rb;
  ASSERT_EQ(compute_report(opt, rb), "");
  EXPECT_EQ(rb.summary.transactions, 5);
  EXPECT_EQ(rb.summary.shed_transactions, 5);
  opt.name.clear();
  opt.min_ms = 15;
  Report rm;
  ASSERT_EQ(compute_report(opt, rm), "");
  EXPECT_EQ(rm.summary.transactions, 15);
}

}  // namespace
