// Pure helpers: nearest-rank percentiles, log buckets, URL split, time arguments, escaping.
#include <gtest/gtest.h>

#include "format.h"
#include "stats.h"
#include "time_arg.h"

using namespace txray::report;

TEST(NearestRank, EmptyIsZero) {
  std::vector<int64_t> v;
  EXPECT_EQ(nearest_rank(v, 50), 0);
  Percentiles p = percentiles(v);
  EXPECT_EQ(p.max, 0);
}

TEST(NearestRank, SingleValueIsEveryPercentile) {
  std::vector<int64_t> v{42};
  Percentiles p = percentiles(v);
  EXPECT_EQ(p.p50, 42);
  EXPECT_EQ(p.p99, 42);
  EXPECT_EQ(p.max, 42);
}

TEST(NearestRank, ExactRanksDoNotRoundUp) {
  // n = 20: p50 -> rank 10, p90 -> 18, p95 -> 19 (0.95*20 is exactly 19), p99 -> ceil(19.8) = 20.
  std::vector<int64_t> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  Percentiles p = percentiles(v);  // sorts
  EXPECT_EQ(p.p50, 10);
  EXPECT_EQ(p.p90, 18);
  EXPECT_EQ(p.p95, 19);
  EXPECT_EQ(p.p99, 20);
  EXPECT_EQ(p.max, 20);
}

TEST(NearestRank, SmallSetsTakeTheNextRankUp) {
  std::vector<int64_t> v{1, 2, 3};  // p50: ceil(1.5) = 2; p90: ceil(2.7) = 3
  EXPECT_EQ(nearest_rank(v, 50), 2);
  EXPECT_EQ(nearest_rank(v, 90), 3);
  std::vector<int64_t> w{1, 2, 3, 4};  // p50: exactly rank 2, not 3
  EXPECT_EQ(nearest_rank(w, 50), 2);
  std::vector<int64_t> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_EQ(nearest_rank(hundred, 99), 99);
  EXPECT_EQ(nearest_rank(hundred, 95), 95);
  hundred.push_back(101);  // n = 101: p99 = ceil(99.99) = 100
  EXPECT_EQ(nearest_rank(hundred, 99), 100);
}

TEST(Histogram, LogBucketsTrimmedAtBothEnds) {
  const int64_t ms = 1'000'000;
  // 1.5 ms -> [1, 2); 3 ms and 4.9 ms -> [2, 5); nothing in [5, 10); 10 ms -> [10, 20)
  auto b = histogram({3 * ms / 2, 3 * ms, 49 * ms / 10, 10 * ms});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].lo_ns, 1 * ms);
  EXPECT_EQ(b[0].hi_ns, 2 * ms);
  EXPECT_EQ(b[0].count, 1);
  EXPECT_EQ(b[1].lo_ns, 2 * ms);
  EXPECT_EQ(b[1].count, 2);
  EXPECT_EQ(b[2].count, 0);  // kept: empty buckets between full ones show the gap
  EXPECT_EQ(b[3].lo_ns, 10 * ms);
  EXPECT_EQ(b[3].count, 1);
}

TEST(Histogram, EdgesAndOpenLastBucket) {
  auto b = histogram({0, 99'999});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].lo_ns, 0);
  EXPECT_EQ(b[0].hi_ns, 100'000);
  EXPECT_EQ(b[0].count, 2);
  auto big = histogram({5'000'000'000'000});  // 5000 s: past the last edge
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0].lo_ns, 1'000'000'000'000);
  EXPECT_EQ(big[0].hi_ns, INT64_MAX);
  EXPECT_TRUE(histogram({}).empty());
}

TEST(Ids, Hex16IsTheUnsignedView) {
  EXPECT_EQ(hex16(0x1234), "0000000000001234");
  EXPECT_EQ(hex16(-1), "ffffffffffffffff");
}

TEST(Url, SplitsHostAndPath) {
  auto a = split_url("GET http://Billing:8080/charge/7?id=1#x");
  EXPECT_EQ(a.host, "billing:8080");
  EXPECT_EQ(a.path, "/charge/7");
  auto b = split_url("https://user:pw@api.example.com");
  EXPECT_EQ(b.host, "api.example.com");
  EXPECT_EQ(b.path, "/");
  auto c = split_url("localhost:9000/x");
  EXPECT_EQ(c.host, "localhost:9000");
  EXPECT_EQ(c.path, "/x");
}

TEST(TimeArg, UnixSecondsIsoAndRelative) {
  std::string err;
  const int64_t now = 1'764'410'400LL * 1'000'000'000;
  EXPECT_EQ(parse_time_arg("1764410400", now, &err), 1'764'410'400LL * 1'000'000'000);
  EXPECT_EQ(parse_time_arg("1764410400.5", now, &err), 1'764'410'400'500'000'000LL);
  EXPECT_EQ(parse_time_arg("2025-11-29T10:00:00Z", now, &err), 1'764'410'400LL * 1'000'000'000);
  EXPECT_EQ(parse_time_arg("2025-11-29 10:00:00.250", now, &err), 1'764'410'400'250'000'000LL);
  EXPECT_EQ(parse_time_arg("2025-11-29T12:00:00+02:00", now, &err), 1'764'410'400LL * 1'000'000'000);
  EXPECT_EQ(parse_time_arg("2025-11-29", now, &err), (1'764'410'400LL - 10 * 3600) * 1'000'000'000);
  EXPECT_EQ(parse_time_arg("-15m", now, &err), now - 15 * 60 * 1'000'000'000LL);
  EXPECT_EQ(parse_time_arg("-2h", now, &err), now - 2 * 3600 * 1'000'000'000LL);
  EXPECT_EQ(parse_time_arg("-1d", now, &err), now - 86400 * 1'000'000'000LL);
}

TEST(TimeArg, BadInputIsAClearError) {
  std::string err;
  for (const char* bad : {"", "yesterday", "-15x", "2025-13-01", "2025-11-29T25:00", "12abc", "-m"}) {
    err.clear();
    EXPECT_FALSE(parse_time_arg(bad, 0, &err)) << bad;
    EXPECT_NE(err.find("bad time"), std::string::npos) << bad;
  }
}

TEST(Format, EscapingAndNumbers) {
  EXPECT_EQ(html_escape("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(fmt_count(1234567), "1,234,567");
  EXPECT_EQ(fmt_ms(2'938'000'000), "2,938.0");
  EXPECT_EQ(fmt_ms(12'500'000), "12.50");
  EXPECT_EQ(fmt_ms(125'000), "0.125");
  EXPECT_EQ(shorten("héllo wörld", 5), "héllo…");
  EXPECT_EQ(shorten("a\nb", 10), "a b");
}
