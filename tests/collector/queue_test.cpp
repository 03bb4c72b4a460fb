// BoundedQueue between the collector's receiving and writer threads.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "bounded_queue.h"

namespace txray::ingest {
namespace {

using namespace std::chrono_literals;
using Item = std::unique_ptr<int>;

TEST(BoundedQueue, FifoWithinLimits) {
  BoundedQueue<Item> q(3, 100);
  for (int i = 0; i < 3; ++i) {
    auto it = std::make_unique<int>(i);
    ASSERT_TRUE(q.push(std::move(it), 10, 0ms));
  }
  EXPECT_EQ(q.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(**q.pop(0ms), i);
  EXPECT_FALSE(q.pop(1ms));
}

TEST(BoundedQueue, AFailedPushLeavesTheItemToTheCaller) {
  BoundedQueue<Item> q(1, 100);
  auto a = std::make_unique<int>(1), b = std::make_unique<int>(2);
  ASSERT_TRUE(q.push(std::move(a), 1, 0ms));
  EXPECT_FALSE(q.push(std::move(b), 1, 5ms));  // full: times out
  ASSERT_TRUE(b);                               // ... and b was not moved from
  EXPECT_EQ(*b, 2);
}

TEST(BoundedQueue, WeightLimitButAHeavyItemStillFitsAnEmptyQueue) {
  BoundedQueue<Item> q(10, 100);
  auto heavy = std::make_unique<int>(1), light = std::make_unique<int>(2);
  ASSERT_TRUE(q.push(std::move(heavy), 1000, 0ms));  // alone it is accepted
  EXPECT_FALSE(q.push(std::move(light), 1, 1ms));     // over the weight limit now
  q.pop(0ms);
  EXPECT_TRUE(q.push(std::move(light), 1, 0ms));
}

TEST(BoundedQueue, CloseDrainsThenEnds) {
  BoundedQueue<Item> q(10, 100);
  auto a = std::make_unique<int>(7);
  q.push(std::move(a), 1, 0ms);
  q.close();
  auto late = std::make_unique<int>(8);
  EXPECT_FALSE(q.push(std::move(late), 1, 0ms));
  EXPECT_FALSE(q.closed_and_empty());
  EXPECT_EQ(**q.pop(1s), 7);
  EXPECT_TRUE(q.closed_and_empty());
  EXPECT_FALSE(q.pop(1s));  // returns at once when closed and empty
}

TEST(BoundedQueue, BlockedProducerResumesWhenTheConsumerTakes) {
  BoundedQueue<Item> q(1, 100);
  auto first = std::make_unique<int>(1);
  q.push(std::move(first), 1, 0ms);
  std::thread producer([&] {
    auto second = std::make_unique<int>(2);
    while (!q.push(std::move(second), 1, 10ms)) {
    }
  });
  EXPECT_EQ(**q.pop(5s), 1);
  EXPECT_EQ(**q.pop(5s), 2);  // arrives once there was room
  producer.join();
}

}  // namespace
}  // namespace txray::ingest
