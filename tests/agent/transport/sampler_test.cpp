// Head sampling (agent/transport/sampler.h): which transactions are always kept, that the rate holds
// and follows the trace id, that every transaction left out is counted (per name, minute, bucket, with
// its response time) and that the counts and the rate reach the wire as txray.proto says.
#include <gtest/gtest.h>

#include <cstring>

#include "core/counters.h"
#include "core/transaction.h"
#include "transport/encode.h"
#include "transport/sampler.h"
#include "txray/v1/shed_bucket.h"
#include "txray/v1/txray.pb.h"

using namespace txray;
using txray::transport::HeadSampler;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 1'764'410'400ull * 1'000'000'000;

Transaction* make_tx(uint64_t n, const char* name = "GET /", uint64_t elapsed = kMs, int status = 200,
                     const char* error = "", const char* kind = "http") {
  auto* t = new Transaction;
  t->txid = n * 0x9E3779B97F4A7C15ull;
  // A trace id whose random low part spreads evenly.
  uint64_t r = n * 0xD1B54A32D192ED03ull;
  for (int i = 8; i < 16; ++i) t->trace_id[i] = uint8_t(r >> (8 * (15 - i)));
  t->name = name;
  t->kind = kind;
  t->start_unix_ns = kT0;
  t->elapsed_ns = elapsed;
  t->status = status;
  t->error = error;
  return t;
}

TEST(HeadSampler, RateOneKeepsEverything) {
  HeadSampler s(1.0, 100 * kMs);
  EXPECT_FALSE(s.active());
  std::vector<Transaction*> batch{make_tx(1), make_tx(2)};
  EXPECT_EQ(s.filter(batch), 0u);
  EXPECT_EQ(batch.size(), 2u);
  for (auto* t : batch) delete t;
}

TEST(HeadSampler, FailedSlowAndContainersAreAlwaysKept) {
  HeadSampler s(0.0, 100 * kMs);
  std::unique_ptr<Transaction> err(make_tx(1, "e", kMs, 200, "boom")), s5(make_tx(2, "5", kMs, 502)),
      slow(make_tx(3, "s", 100 * kMs)), exit1(make_tx(4, "p", kMs, 3, "", "process")),
      cont(make_tx(5, "u", kMs, 0, "", "unattributed")), fast(make_tx(6)), ok404(make_tx(7, "n", kMs, 404));
  EXPECT_TRUE(s.keep(*err));
  EXPECT_TRUE(s.keep(*s5));
  EXPECT_TRUE(s.keep(*slow));
  EXPECT_TRUE(s.keep(*exit1));
  EXPECT_TRUE(s.keep(*cont));
  EXPECT_FALSE(s.keep(*fast));
  EXPECT_FALSE(s.keep(*ok404));
}

TEST(HeadSampler, KeepsTheRateCountsTheRestAndFollowsTheTraceId) {
  counters().reset();
  HeadSampler s(0.25, 100 * kMs);
  std::vector<Transaction*> batch;
  for (uint64_t i = 1; i <= 4000; ++i) batch.push_back(make_tx(i, i % 2 ? "GET /a" : "GET /b", (1 + i % 3) * kMs));
  batch.push_back(make_tx(9999, "GET /a", kMs, 500));
  size_t out = s.filter(batch);
  EXPECT_NEAR(double(batch.size()) / 4001, 0.25, 0.03);
  EXPECT_EQ(out + batch.size(), 4001u);
  EXPECT_EQ(counters().sampled_out.load(), out);
  uint64_t counted = 0, elapsed = 0;
  for (const auto& c : s.pending()) {
    counted += c.count;
    elapsed += c.elapsed_ns;
    EXPECT_EQ(c.minute_unix_ns, v1::shed_minute(kT0 + c.elapsed_ns / c.count));
    EXPECT_EQ(c.bucket, v1::shed_bucket(c.elapsed_ns / c.count));
  }
  EXPECT_EQ(counted, out);
  EXPECT_EQ(s.pending().size(), 6u);  // 2 names x 3 response times, one minute
  uint64_t kept_elapsed = 0;
  for (auto* t : batch) kept_elapsed += t->elapsed_ns;
  uint64_t all = 0;
  for (uint64_t i = 1; i <= 4000; ++i) all += (1 + i % 3) * kMs;
  EXPECT_EQ(elapsed + kept_elapsed, all + kMs);
  // The same trace ids give the same decisions (callers and callees with one rate keep whole traces).
  HeadSampler again(0.25, 100 * kMs);
  for (uint64_t i = 1; i <= 100; ++i) {
    std::unique_ptr<Transaction> t(make_tx(i));
    EXPECT_EQ(s.keep(*t), again.keep(*t));
  }
  for (auto* t : batch) delete t;
  s.delivered();
  EXPECT_TRUE(s.pending().empty());
}

TEST(HeadSampler, CountsAndRateGoOnTheWire) {
  counters().reset();
  HeadSampler s(0.0, 100 * kMs);
  std::vector<Transaction*> batch{make_tx(1, "GET /a", 2 * kMs), make_tx(2, "GET /a", 2 * kMs),
                                  make_tx(3, "GET /a", 2 * kMs, 500)};
  ASSERT_EQ(s.filter(batch), 2u);
  Identity id;
  id.instance_id = 7;
  std::string wire;
  ASSERT_TRUE(encode_batch(id, counters(), 1, batch, &wire, {}, 0, &s.pending(), 0.5));
  v1::Batch b;
  ASSERT_TRUE(b.ParseFromString(wire));
  EXPECT_EQ(b.transactions_size(), 1);
  EXPECT_EQ(b.drops().sampled_out(), 2u);
  EXPECT_EQ(b.agent().sample_rate(), 0.5);
  ASSERT_EQ(b.sampled_out_size(), 1);
  EXPECT_EQ(b.sampled_out(0).name(), "GET /a");
  EXPECT_EQ(b.sampled_out(0).kind(), "http");
  EXPECT_EQ(b.sampled_out(0).count(), 2u);
  EXPECT_EQ(b.sampled_out(0).elapsed_ns(), 4 * kMs);
  EXPECT_EQ(b.sampled_out(0).minute_unix_ns(), kT0);
  EXPECT_EQ(b.sampled_out(0).bucket(), v1::shed_bucket(2 * kMs));
  EXPECT_FALSE(b.sampled_out(0).by_collector());
  for (auto* t : batch) delete t;
}

}  // namespace
