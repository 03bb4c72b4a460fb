// The span table (agent/core/span_owner.h): which inbound request an outbound HTTP/2 call a runtime shim
// named belongs to. Never a wrong request: ended requests, shared caller spans and unknown spans name
// nothing; every reference the table took is given back.
#include "core/span_owner.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "hints/hint_protocol.h"
#include "support/test_support.h"
#include "core/transaction.h"

using namespace txray;
using txray::test::Collected;

namespace {

class SpanOwnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Collected::install();
    span_owner::after_fork_child();  // an empty table for each case
    span_owner::enable();
  }
  void TearDown() override { tx::set_sink(nullptr); }
  static Transaction* request(uint64_t parent) {
    Transaction* t = tx::begin("POST /demo.Front/Page", "grpc");
    t->parent_span_id = parent;
    return t;
  }
  // What H2Server::finish does.
  static void end(Transaction* t) {
    span_owner::request_ended(t);
    tx::end(t, 200, {});
  }
  static bool sent(const Transaction* t) {
    for (auto& x : Collected::txs)
      if (x.get() == t) return true;
    return false;
  }
};

TEST_F(SpanOwnerTest, SpanNamesItsRequestOnce) {
  Transaction* a = request(0x1111);
  Transaction* b = request(0x2222);
  ASSERT_TRUE(span_owner::request_began(a));
  ASSERT_TRUE(span_owner::request_began(b));
  EXPECT_TRUE(a->mt);
  EXPECT_TRUE(a->flat);
  uint64_t sa = span_owner::name_span(0x1111);
  uint64_t sb = span_owner::name_span(0x2222);
  ASSERT_NE(sa, 0u);
  ASSERT_NE(sb, 0u);
  EXPECT_NE(sa, sb);
  EXPECT_EQ(span_owner::name_span(0x3333), 0u);  // nobody's caller span
  EXPECT_EQ(span_owner::take(sb), b);
  EXPECT_EQ(span_owner::take(sb), nullptr);  // taken once
  EXPECT_EQ(span_owner::take(0x1111), nullptr);  // a caller span is no named span
  Transaction* got = span_owner::take(sa);
  EXPECT_EQ(got, a);
  // The request ends while its call row is open: it is sent only once the row lets go.
  end(a);
  EXPECT_FALSE(sent(a));
  span_owner::release(got);
  EXPECT_TRUE(sent(a));
  span_owner::release(b);
  end(b);
  EXPECT_TRUE(sent(b));
  EXPECT_EQ(span_owner::stats().entries, 0u);
}

TEST_F(SpanOwnerTest, EndedRequestCapturesNothing) {
  Transaction* a = request(0x10);
  ASSERT_TRUE(span_owner::request_began(a));
  uint64_t s1 = span_owner::name_span(0x10);
  uint64_t s2 = span_owner::name_span(0x10);
  ASSERT_NE(s1, 0u);
  ASSERT_NE(s2, 0u);
  EXPECT_EQ(span_owner::take(s1), a);
  span_owner::release(a);
  end(a);  // s2's call was never written
  EXPECT_TRUE(sent(a));
  EXPECT_EQ(span_owner::take(s2), nullptr);
  EXPECT_EQ(span_owner::name_span(0x10), 0u);
  EXPECT_EQ(span_owner::stats().entries, 0u);
  // A later request with the same caller span (a retry) is a request of its own.
  Transaction* again = request(0x10);
  ASSERT_TRUE(span_owner::request_began(again));
  uint64_t s3 = span_owner::name_span(0x10);
  EXPECT_EQ(span_owner::take(s3), again);
  span_owner::release(again);
  end(again);
  EXPECT_EQ(span_owner::stats().entries, 0u);
}

TEST_F(SpanOwnerTest, SharedCallerSpanNamesNeither) {
  Transaction* a = request(0x77);
  Transaction* b = request(0x77);
  ASSERT_TRUE(span_owner::request_began(a));
  uint64_t early = span_owner::name_span(0x77);  // only a in flight: a's
  ASSERT_TRUE(span_owner::request_began(b));
  EXPECT_EQ(span_owner::name_span(0x77), 0u);
  end(a);
  EXPECT_TRUE(sent(a));
  EXPECT_EQ(span_owner::take(early), nullptr);  // a has ended
  EXPECT_EQ(span_owner::name_span(0x77), 0u);  // still refused: a late hint of a's handler would name b
  end(b);
  EXPECT_TRUE(sent(b));
  EXPECT_EQ(span_owner::stats().entries, 0u);
}

TEST_F(SpanOwnerTest, OffUntilEnabledAndBounded) {
  span_owner::after_fork_child();
  Transaction* t = request(0x5);
  // enable() is sticky in a process; the table itself is bounded.
  std::vector<Transaction*> many;
  for (size_t i = 0; i < span_owner::kMaxEntries + 10; ++i) {
    Transaction* x = request(0x100000 + i);
    if (span_owner::request_began(x)) many.push_back(x);
    else tx::end(x, 200, {});
  }
  EXPECT_EQ(many.size(), span_owner::kMaxEntries);
  EXPECT_FALSE(span_owner::request_began(t));
  EXPECT_EQ(span_owner::name_span(0x100000), 0u);  // no room for the span either
  for (Transaction* x : many) end(x);
  tx::end(t, 200, {});
  EXPECT_EQ(span_owner::stats().entries, 0u);
  EXPECT_EQ(Collected::txs.size(), span_owner::kMaxEntries + 11);
}

TEST_F(SpanOwnerTest, HintMessages) {
  hint::Message m;
  ASSERT_TRUE(hint::parse("S", 32, &m));
  EXPECT_EQ(m.op, 'S');
  EXPECT_EQ(m.token, 0u);
  ASSERT_TRUE(hint::parse("S00000000000000ab", 32, &m));
  EXPECT_EQ(m.token, 0xabu);
  EXPECT_FALSE(hint::parse("S0000000000000000", 32, &m));
  EXPECT_FALSE(hint::parse("S00ab", 32, &m));
  Transaction* a = request(0xab);
  ASSERT_TRUE(span_owner::request_began(a));
  char buf[32] = "S00000000000000ab";
  ASSERT_TRUE(hint::parse(buf, sizeof buf, &m));
  EXPECT_TRUE(hint::apply(m, buf, sizeof buf));
  uint64_t span = strtoull(buf, nullptr, 16);
  EXPECT_EQ(strlen(buf), 16u);
  EXPECT_EQ(span_owner::take(span), a);
  span_owner::release(a);
  end(a);
}

TEST_F(SpanOwnerTest, ThreadsRace) {
  // Requests begin and end on one thread while others name and take spans for them: every reference
  // comes back (each request is sent exactly once) and no span names another request.
  constexpr int kRequests = 2000;
  std::atomic<int> wrong{0};
  std::vector<Transaction*> reqs;
  for (int i = 0; i < kRequests; ++i) reqs.push_back(request(0x9000 + i));
  std::atomic<int> began{0};
  std::thread owner([&] {
    for (int i = 0; i < kRequests; ++i) {
      span_owner::request_began(reqs[i]);
      began.store(i + 1);
      if (i >= 8) end(reqs[i - 8]);
    }
    for (int i = kRequests - 8; i < kRequests; ++i) end(reqs[i]);
  });
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&, c] {
      for (int i = c; i < kRequests; i += 3) {
        while (began.load() <= i) std::this_thread::yield();
        uint64_t s = span_owner::name_span(0x9000 + i);
        if (!s) continue;
        Transaction* t = span_owner::take(s);
        if (t && t != reqs[i]) wrong.fetch_add(1);
        if (t) span_owner::release(t);
      }
    });
  owner.join();
  for (auto& th : callers) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(span_owner::stats().entries, 0u);
  EXPECT_EQ(Collected::txs.size(), size_t(kRequests));
}

}  // namespace
