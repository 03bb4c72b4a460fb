// The handle table the SQL hooks keep per statement / connection: lookups, replacement of a reused
// handle address, removal, and the per-thread last-hit cache staying correct when another thread
// changes the table.
#include "protocols/sql/sql_statement.h"

#include <gtest/gtest.h>

#include <thread>

namespace txray::sql {
namespace {

struct State {
  int value = 0;
};

TEST(HandleTable, FindResetTake) {
  HandleTable<State> t;
  int a, b;
  EXPECT_EQ(t.find(&a), nullptr);
  State& sa = t.reset(&a);
  sa.value = 1;
  EXPECT_EQ(t.find(&a), &sa);
  EXPECT_EQ(t.find(&a)->value, 1);
  EXPECT_EQ(t.find(&b), nullptr);
  State& sb = t.reset(&b);
  sb.value = 2;
  EXPECT_EQ(t.find(&a)->value, 1);
  EXPECT_EQ(t.find(&b)->value, 2);
  std::unique_ptr<State> taken = t.take(&a);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->value, 1);
  EXPECT_EQ(t.find(&a), nullptr);
  EXPECT_EQ(t.take(&a), nullptr);
  EXPECT_EQ(t.find(&b)->value, 2);
}

TEST(HandleTable, ResetGivesAFreshStateForAReusedAddress) {
  HandleTable<State> t;
  int h = 0;  // only its address is used, as a stand-in for a library handle
  t.reset(&h).value = 7;
  EXPECT_EQ(t.find(&h)->value, 7);  // now cached on this thread
  State& fresh = t.reset(&h);       // the library freed the handle and reused its address
  EXPECT_EQ(fresh.value, 0);
  EXPECT_EQ(t.find(&h), &fresh);
}

TEST(HandleTable, CacheSeesChangesFromOtherThreads) {
  HandleTable<State> t;
  int h = 0;  // only its address is used, as a stand-in for a library handle
  t.reset(&h).value = 3;
  ASSERT_NE(t.find(&h), nullptr);  // cached here
  std::thread([&] { t.take(&h); }).join();
  EXPECT_EQ(t.find(&h), nullptr);
  std::thread([&] { t.reset(&h).value = 4; }).join();
  ASSERT_NE(t.find(&h), nullptr);
  EXPECT_EQ(t.find(&h)->value, 4);
}

TEST(HandleTable, TwoTablesDoNotShareTheCache) {
  HandleTable<State> t1, t2;
  int h = 0;  // only its address is used, as a stand-in for a library handle
  t1.reset(&h).value = 1;
  EXPECT_NE(t1.find(&h), nullptr);
  EXPECT_EQ(t2.find(&h), nullptr);
}

TEST(HandleTable, ManyHandlesFromManyThreads) {
  HandleTable<State> t;
  static int handles[4][256];
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 256; ++i) t.reset(&handles[k][i]).value = k * 1000 + i;
      for (int i = 0; i < 256; ++i) {
        State* s = t.find(&handles[k][i]);
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(s->value, k * 1000 + i);
      }
      for (int i = 0; i < 256; i += 2) t.take(&handles[k][i]);
    });
  }
  for (auto& th : threads) th.join();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 256; ++i) EXPECT_EQ(t.find(&handles[k][i]) == nullptr, i % 2 == 0);
}

}  // namespace
}  // namespace txray::sql
