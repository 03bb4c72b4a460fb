// The bounded MPSC queue between the host's threads and the agent thread.
#include "core/mpsc_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

using txray::MpscQueue;

TEST(MpscQueue, FullQueueRefusesAndEmptyQueueReturnsNull) {
  MpscQueue<int> q(4);
  EXPECT_EQ(q.capacity(), 4u);
  int v[5];
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.push(&v[i]));
  EXPECT_FALSE(q.push(&v[4]));  // full: the caller drops and counts
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.pop(), &v[i]);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(q.push(&v[4]));  // usable again after wrapping
  EXPECT_EQ(q.pop(), &v[4]);
}

TEST(MpscQueue, CapacityRoundsUpToAPowerOfTwo) {
  EXPECT_EQ(MpscQueue<int>(5).capacity(), 8u);
  EXPECT_EQ(MpscQueue<int>(0).capacity(), 2u);
}

TEST(MpscQueue, ManyProducersLoseNothingAcceptedAndCountEveryRefusal) {
  constexpr int kThreads = 4, kPer = 20000;
  MpscQueue<int> q(64);
  std::vector<int> items(kThreads * kPer);
  std::atomic<int> refused{0};
  std::atomic<bool> done{false};
  std::set<int*> seen;
  std::thread consumer([&] {
    for (;;) {
      if (int* p = q.pop()) {
        EXPECT_TRUE(seen.insert(p).second);
      } else if (done.load()) {
        while (int* p2 = q.pop()) EXPECT_TRUE(seen.insert(p2).second);
        return;
      }
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i)
        if (!q.push(&items[size_t(t * kPer + i)])) refused.fetch_add(1);
    });
  for (auto& p : producers) p.join();
  done.store(true);
  consumer.join();
  EXPECT_EQ(seen.size() + size_t(refused.load()), items.size());
}
