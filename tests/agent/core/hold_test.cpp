// hold.h: the flag a hook holds while it works on shared state. It waits for another thread that holds
// it (even one descheduled for a while), never for the calling thread itself (a signal handler that
// interrupted its own holding), and gives up after its bound, counting the give-up.
#include "core/hold.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/counters.h"
#include "core/transaction.h"

using namespace txray;

TEST(Hold, WaitsForAnotherThreadThatHoldsIt) {
  HoldFlag f;
  std::atomic<bool> held{false};
  uint64_t errors0 = counters().internal_errors.load();
  std::thread other([&] {
    ASSERT_TRUE(f.try_take(tx::this_tid()));
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    f.release();
  });
  while (!held) {}
  {
    Hold h(&f, 60'000'000'000);  // a bound no load reaches: what is checked is that it waits, not how long
    EXPECT_TRUE(h);
    EXPECT_EQ(f.holder.load(), tx::this_tid());
  }
  other.join();
  EXPECT_EQ(f.holder.load(), 0u);
  EXPECT_EQ(counters().internal_errors.load(), errors0);
}

TEST(Hold, GivesUpAtOnceWhenTheCallingThreadHoldsIt) {
  HoldFlag f;
  uint64_t errors0 = counters().internal_errors.load();
  Hold outer(&f);
  ASSERT_TRUE(outer);
  auto t0 = std::chrono::steady_clock::now();
  Hold inner(&f, 60'000'000'000);  // what a signal handler on this thread would do, with a bound of a minute
  EXPECT_FALSE(inner);
  // Had it waited for itself it would have taken the whole minute: far from anything load can add.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(counters().internal_errors.load(), errors0 + 1);
}

TEST(Hold, GivesUpAfterItsBoundAndCountsIt) {
  HoldFlag f;
  std::atomic<bool> held{false}, done{false};
  std::thread other([&] {
    ASSERT_TRUE(f.try_take(tx::this_tid()));
    held = true;
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    f.release();
  });
  while (!held) {}
  uint64_t errors0 = counters().internal_errors.load();
  {
    Hold h(&f, 5'000'000);
    EXPECT_FALSE(h);
  }
  EXPECT_EQ(counters().internal_errors.load(), errors0 + 1);
  done = true;
  other.join();
  Hold again(&f);
  EXPECT_TRUE(again);
}

TEST(Hold, ANullFlagIsNoHoldAndNoError) {
  uint64_t errors0 = counters().internal_errors.load();
  Hold h(nullptr);
  EXPECT_FALSE(h);
  EXPECT_EQ(counters().internal_errors.load(), errors0);
}
