// Load shedding (collector/ingest/shedder.h): which transactions may be shed, how many are at a given
// queue fill, and that what is shed is counted exactly — in the batch (ShedCount, by_collector), in the
// store (shed_counts), and as received (no false lost_in_flight window). Also the decoder's rule that
// only the collector may mark counts as its own, and the shared response-time buckets.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "decoder.h"
#include "shedder.h"
#include "store.h"
#include "txray/v1/shed_bucket.h"
#include "writer.h"

namespace txray::ingest {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 1'764'410'400ull * 1'000'000'000;  // a whole minute

v1::Batch make_batch(const std::string& app = "shop", uint64_t instance = 42) {
  v1::Batch b;
  b.mutable_agent()->set_instance_id(instance);
  b.mutable_agent()->set_app(app);
  b.mutable_agent()->set_program(app);
  return b;
}

v1::Transaction* add_tx(v1::Batch& b, const std::string& name, uint64_t elapsed, int status = 200,
                        const std::string& error = "", const std::string& kind = "http", uint64_t start = kT0) {
  static uint64_t txid = 1;
  auto* t = b.add_transactions();
  t->set_txid(txid++);
  t->set_name(name);
  t->set_kind(kind);
  t->set_start_unix_ns(start);
  t->set_elapsed_ns(elapsed);
  t->set_status(status);
  t->set_error(error);
  return t;
}

// 100 transactions of 1..100 ms: afterwards the app's p95 is 95 ms.
void warm_up(Shedder& s, const std::string& app = "shop") {
  v1::Batch b = make_batch(app);
  for (int i = 1; i <= 100; ++i) add_tx(b, "warm", i * kMs);
  EXPECT_EQ(s.process(b, 0.0), 0u);  // an empty queue: nothing shed
  EXPECT_EQ(b.transactions_size(), 100);
}

TEST(ShedBucket, BoundsHoldTheValueAndAreAtMostAQuarterWide) {
  EXPECT_EQ(v1::shed_bucket(0), 0u);
  EXPECT_EQ(v1::shed_bucket(1023), 0u);
  EXPECT_EQ(v1::shed_bucket(1024), 1u);
  for (uint64_t v : {1024ull, 1279ull, 1280ull, 2047ull, 2048ull, 999'999ull, 1'000'000ull, 123'456'789ull,
                     (1ull << 62) + 12345, ~0ull}) {
    uint32_t b = v1::shed_bucket(v);
    ASSERT_LT(b, v1::kShedBuckets) << v;
    EXPECT_LE(v1::shed_bucket_lo(b), v) << v;
    if (b + 1 < v1::kShedBuckets) {
      EXPECT_LT(v, v1::shed_bucket_hi(b)) << v;
    }
    if (b > 0 && b + 1 < v1::kShedBuckets) {
      EXPECT_LE(v1::shed_bucket_hi(b) - v1::shed_bucket_lo(b), v1::shed_bucket_lo(b) / 4) << v;
    }
  }
  EXPECT_EQ(v1::shed_minute(kT0 + 59'999'999'999ull), kT0);
  EXPECT_EQ(v1::shed_minute(kT0 + 60'000'000'000ull), kT0 + 60'000'000'000ull);
}

TEST(RollingP95, NearestRankOfTheLastWindow) {
  RollingP95 p;
  for (int i = 1; i <= 40; ++i) p.observe(i);
  EXPECT_FALSE(p.known());  // fewer than kMinSamples
  for (int i = 41; i <= 100; ++i) p.observe(i);
  EXPECT_TRUE(p.known());
  EXPECT_EQ(p.p95(), 95u);  // nearest rank of 1..100
  p.observe(0);
  for (int i = 102; i <= 128; ++i) p.observe(1000);  // 27 slow ones among 128
  EXPECT_EQ(p.p95(), 1000u);
  // The window rolls: 4096 fast values later the slow ones are gone.
  for (int i = 0; i < 4096; ++i) p.observe(7);
  EXPECT_EQ(p.p95(), 7u);
}

TEST(ShedderShare, ZeroBelowStartLinearToOneAtFull) {
  Shedder s({.enabled = true, .start_fill = 0.5, .full_fill = 0.8, .keep_slower_than_ns = 0});
  EXPECT_EQ(s.share(0.0), 0.0);
  EXPECT_EQ(s.share(0.49), 0.0);
  EXPECT_NEAR(s.share(0.65), 0.5, 1e-9);
  EXPECT_EQ(s.share(0.8), 1.0);
  EXPECT_EQ(s.share(1.0), 1.0);
  Shedder off({.enabled = false});
  EXPECT_EQ(off.share(1.0), 0.0);
}

TEST(Shedder, NeverShedsFailedSlowOrUnknown) {
  Shedder s({.enabled = true, .start_fill = 0.5, .full_fill = 0.8, .keep_slower_than_ns = int64_t(50 * kMs)});
  v1::Batch cold = make_batch("cold");
  for (int i = 0; i < 10; ++i) add_tx(cold, "fast", kMs);
  EXPECT_EQ(s.process(cold, 1.0), 0u) << "an app with no p95 yet keeps everything";
  warm_up(s);
  v1::Batch b = make_batch();
  add_tx(b, "err", kMs, 200, "boom");                      // error text
  add_tx(b, "5xx", kMs, 503);                              // server error
  add_tx(b, "exit", kMs, 1, "", "process");                // a process that exited non-zero
  add_tx(b, "slow", 96 * kMs);                             // above the app's p95 (95 ms)
  add_tx(b, "threshold", 60 * kMs);                        // under the p95 but over --keep-slower-than
  add_tx(b, "unattributed steps", kMs, 0, "", "unattributed");
  add_tx(b, "fast", 3 * kMs);                              // sheddable
  add_tx(b, "fast", 3 * kMs);
  add_tx(b, "4xx", 2 * kMs, 404);                          // a client error is a success here
  add_tx(b, "ok-exit", kMs, 0, "", "process");
  EXPECT_EQ(s.process(b, 1.0), 4u);
  std::vector<std::string> kept;
  for (const auto& t : b.transactions()) kept.push_back(t.name());
  EXPECT_EQ(kept, (std::vector<std::string>{"err", "5xx", "exit", "slow", "threshold", "unattributed steps"}));
  // Counted per (name, kind, minute, bucket), marked as the collector's.
  std::map<std::string, uint64_t> counted;
  uint64_t total = 0, elapsed = 0;
  for (const auto& c : b.sampled_out()) {
    EXPECT_TRUE(c.by_collector());
    EXPECT_EQ(c.minute_unix_ns(), kT0);
    EXPECT_EQ(c.bucket(), v1::shed_bucket(c.elapsed_ns() / c.count()));
    counted[c.name()] += c.count();
    total += c.count();
    elapsed += c.elapsed_ns();
  }
  EXPECT_EQ(counted, (std::map<std::string, uint64_t>{{"fast", 2}, {"4xx", 1}, {"ok-exit", 1}}));
  EXPECT_EQ(total, 4u);
  EXPECT_EQ(elapsed, (3 + 3 + 2 + 1) * kMs);
  EXPECT_EQ(b.sampled_out_size(), 3) << "the two fast ones share one entry";
}

TEST(Shedder, ShedsTheShareOfTheFillAndKeepsOrder) {
  Shedder s({.enabled = true, .start_fill = 0.5, .full_fill = 0.8, .keep_slower_than_ns = 0});
  warm_up(s);
  v1::Batch b = make_batch();
  for (int i = 0; i < 1000; ++i) add_tx(b, "n" + std::to_string(i), kMs);
  EXPECT_EQ(s.process(b, 0.65), 500u);  // half of the sheddable ones at a fill half-way
  for (int i = 1; i < b.transactions_size(); ++i)  // the kept ones in their order
    EXPECT_LT(std::stoi(b.transactions(i - 1).name().substr(1)), std::stoi(b.transactions(i).name().substr(1)));
  v1::Batch low = make_batch();
  for (int i = 0; i < 100; ++i) add_tx(low, "x", kMs);
  EXPECT_EQ(s.process(low, 0.3), 0u);
  EXPECT_EQ(low.sampled_out_size(), 0);
}

TEST(Shedder, P95IsPerApplication) {
  Shedder s;
  warm_up(s, "slowapp");  // p95 95 ms
  v1::Batch fast = make_batch("fastapp");
  for (int i = 0; i < 100; ++i) add_tx(fast, "f", kMs);  // p95 1 ms
  s.process(fast, 0.0);
  v1::Batch a = make_batch("slowapp"), f = make_batch("fastapp");
  add_tx(a, "x", 50 * kMs);
  add_tx(f, "x", 50 * kMs);
  EXPECT_EQ(s.process(a, 1.0), 1u) << "50 ms is under slowapp's p95";
  EXPECT_EQ(s.process(f, 1.0), 0u) << "50 ms is far above fastapp's p95";
}

TEST(Decoder, OnlyTheCollectorMarksCountsAsItsOwn) {
  v1::Batch b = make_batch();
  auto* c = b.add_sampled_out();
  c->set_name("GET /");
  c->set_minute_unix_ns(kT0);
  c->set_bucket(40);
  c->set_count(3);
  c->set_elapsed_ns(3 * kMs);
  std::string wire = b.SerializeAsString();
  v1::Batch out;
  EXPECT_TRUE(decode_batch(wire.data(), wire.size(), out).ok());
  EXPECT_EQ(out.sampled_out(0).count(), 3u);
  c->set_by_collector(true);
  wire = b.SerializeAsString();
  EXPECT_EQ(decode_batch(wire.data(), wire.size(), out).status, DecodeStatus::kInvalid);
  c->set_by_collector(false);
  c->set_bucket(v1::kShedBuckets);
  wire = b.SerializeAsString();
  EXPECT_EQ(decode_batch(wire.data(), wire.size(), out).status, DecodeStatus::kInvalid);
}

class ShedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("txray-shed-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = open_store((dir_ / "txray.db").string(), OpenMode::kCreate);
    writer_ = std::make_unique<Writer>(db_);
  }
  void TearDown() override {
    writer_.reset();
    db_ = Db();
    std::filesystem::remove_all(dir_);
  }
  void write(const v1::Batch& b) {
    writer_->begin();
    writer_->write(b, 1000);
    writer_->commit();
  }
  int64_t value(const std::string& sql) {
    Stmt s(db_, sql);
    s.step();
    return s.i64(0);
  }
  std::filesystem::path dir_;
  Db db_;
  std::unique_ptr<Writer> writer_;
};

// The count merge: collector-shed and agent-sampled counts land in shed_counts, added up per key; the
// shed transactions count as received, so the next batch's sent_transactions finds nothing lost.
TEST_F(ShedStoreTest, CountsAreStoredMergedAndReceived) {
  Shedder s;
  warm_up(s);
  v1::Batch b1 = make_batch();
  b1.set_batch_seq(1);
  for (int i = 0; i < 10; ++i) add_tx(b1, "GET /a", 2 * kMs);
  add_tx(b1, "GET /a", 2 * kMs, 500);
  auto* agent = b1.add_sampled_out();  // the agent's own head sampling
  agent->set_name("GET /a");
  agent->set_kind("http");
  agent->set_minute_unix_ns(kT0);
  agent->set_bucket(v1::shed_bucket(2 * kMs));
  agent->set_count(7);
  agent->set_elapsed_ns(14 * kMs);
  ASSERT_EQ(s.process(b1, 1.0), 10u);
  write(b1);
  EXPECT_EQ(value("SELECT count(*) FROM transactions"), 1);
  EXPECT_EQ(value("SELECT sum(count) FROM shed_counts WHERE origin = 'collector'"), 10);
  EXPECT_EQ(value("SELECT sum(count) FROM shed_counts WHERE origin = 'agent'"), 7);
  EXPECT_EQ(value("SELECT sum(elapsed_ns) FROM shed_counts WHERE origin = 'collector'"), int64_t(20 * kMs));
  // A second batch of the same minute adds to the same rows.
  v1::Batch b2 = make_batch();
  b2.set_batch_seq(2);
  b2.set_sent_transactions(11);  // the agent sent 11 before: all received (1 stored + 10 shed)
  for (int i = 0; i < 5; ++i) add_tx(b2, "GET /a", 2 * kMs);
  ASSERT_EQ(s.process(b2, 1.0), 5u);
  write(b2);
  EXPECT_EQ(value("SELECT count(*) FROM shed_counts WHERE origin = 'collector'"), 1);
  EXPECT_EQ(value("SELECT sum(count) FROM shed_counts WHERE origin = 'collector'"), 15);
  EXPECT_EQ(value("SELECT count(*) FROM drop_windows WHERE reason = 'lost_in_flight'"), 0);
  EXPECT_EQ(value("SELECT transactions FROM agent_received"), 16);
  // Had they not been counted as received, the agent's 11 would have looked like 10 lost.
  v1::Batch b3 = make_batch();
  b3.set_batch_seq(3);
  b3.set_sent_transactions(16 + 4);  // 4 really lost between b2 and b3
  write(b3);
  EXPECT_EQ(value("SELECT sum(count) FROM drop_windows WHERE reason = 'lost_in_flight'"), 4);
}

}  // namespace
}  // namespace txray::ingest
