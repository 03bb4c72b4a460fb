// Drop windows (transport/drop_windows.h): when transactions were lost, from the counters and the stamps
// the drop paths leave. The transport thread's clock is passed in, so the windows' opening, closing and
// delivery are checked without waiting.
#include <gtest/gtest.h>

#include "core/counters.h"
#include "transport/drop_windows.h"
#include "transport/encode.h"
#include "txray/v1/txray.pb.h"

using namespace txray;
using transport::DropWindow;
using transport::DropWindows;

namespace {

constexpr uint64_t kSec = 1'000'000'000;

TEST(DropWindows, OpenWhileDropsGoOnCloseAfterAQuietSecondDeliveredTwiceThenRetired) {
  Counters c;
  DropWindows w;
  w.update(c, 1 * kSec);
  EXPECT_TRUE(w.riding().empty());
  EXPECT_FALSE(w.want_send());

  c.drop(DropReason::send_failed, 10, 1000);
  c.drop(DropReason::send_failed, 5, 2000);
  w.update(c, 2 * kSec);
  ASSERT_EQ(w.riding().size(), 1u);
  DropWindow d = w.riding()[0];
  EXPECT_EQ(d.seq, 1u);
  EXPECT_EQ(d.reason, DropReason::send_failed);
  EXPECT_EQ(d.count, 15u);
  EXPECT_EQ(d.first_unix_ns, 1000u);
  EXPECT_EQ(d.last_unix_ns, 2000u);
  EXPECT_FALSE(d.closed);
  EXPECT_TRUE(w.want_send());
  w.delivered(2 * kSec);  // an open window rides on, but the collector has its state
  EXPECT_FALSE(w.want_send());

  c.drop(DropReason::send_failed, 1, 3000);
  w.update(c, 2 * kSec + kSec / 2);
  EXPECT_EQ(w.riding()[0].count, 16u);
  EXPECT_EQ(w.riding()[0].last_unix_ns, 3000u);
  w.update(c, 3 * kSec);  // half a second quiet: still open
  EXPECT_FALSE(w.riding()[0].closed);

  w.update(c, 3 * kSec + kSec / 2 + 1);  // a second without a drop: closed
  ASSERT_EQ(w.riding().size(), 1u);
  EXPECT_TRUE(w.riding()[0].closed);
  EXPECT_EQ(w.riding()[0].count, 16u);
  EXPECT_EQ(c.stamps[int(DropReason::send_failed)].first_ns.load(), 0u);  // the next window starts afresh
  EXPECT_TRUE(w.want_send());

  w.delivered(4 * kSec);
  w.delivered(4 * kSec + kSec / 2);  // twice, but not a second apart: still riding
  ASSERT_EQ(w.riding().size(), 1u);
  w.delivered(5 * kSec);
  EXPECT_TRUE(w.riding().empty());
  EXPECT_FALSE(w.want_send());

  // A second burst is a window of its own, with only its own drops.
  c.drop(DropReason::send_failed, 7, 9000);
  w.update(c, 6 * kSec);
  ASSERT_EQ(w.riding().size(), 1u);
  EXPECT_EQ(w.riding()[0].seq, 2u);
  EXPECT_EQ(w.riding()[0].count, 7u);
  EXPECT_EQ(w.riding()[0].first_unix_ns, 9000u);
}

TEST(DropWindows, AtTheEndEveryOpenWindowCloses) {
  Counters c;
  DropWindows w;
  c.drop(DropReason::queue_full, 3, 1000);
  w.update(c, 1 * kSec);
  ASSERT_EQ(w.riding().size(), 1u);
  EXPECT_FALSE(w.riding()[0].closed);
  w.delivered(1 * kSec);
  c.drop(DropReason::queue_full, 2, 1500);
  w.update(c, 1 * kSec + 100, /*ending=*/true);  // 100 ns after the last drop: not quiet, but nothing can follow
  ASSERT_EQ(w.riding().size(), 1u);
  EXPECT_TRUE(w.riding()[0].closed);
  EXPECT_EQ(w.riding()[0].count, 5u);
  EXPECT_TRUE(w.changed());  // so the exit sends it once more
}

TEST(DropWindows, EachReasonHasItsOwnWindow) {
  Counters c;
  DropWindows w;
  c.drop(DropReason::queue_full, 3, 100);
  c.drop(DropReason::send_failed, 4, 200);
  w.update(c, kSec);
  ASSERT_EQ(w.riding().size(), 2u);
  uint64_t total = 0;
  for (const auto& d : w.riding()) total += d.count;
  EXPECT_EQ(total, 7u);
  // queue_full goes quiet, send_failed goes on.
  c.drop(DropReason::send_failed, 1, 300);
  w.update(c, 2 * kSec + 1);
  for (const auto& d : w.riding()) EXPECT_EQ(d.closed, d.reason == DropReason::queue_full);
}

TEST(DropWindows, PastTheClosedLimitWindowsStayOpenAndMerge) {
  Counters c;
  DropWindows w;
  uint64_t t = kSec;
  for (size_t i = 0; i < DropWindows::kMaxClosed + 5; ++i) {  // collector away: nothing delivered
    c.drop(DropReason::queue_full, 1, 1000 + i);
    w.update(c, t);
    t += 2 * kSec;
    w.update(c, t);
  }
  EXPECT_EQ(w.riding().size(), DropWindows::kMaxClosed + 1);
  uint64_t total = 0;
  for (const auto& d : w.riding()) total += d.count;
  EXPECT_EQ(total, c.queue_full.load());  // merged, never lost
  EXPECT_FALSE(w.riding().back().closed);
  EXPECT_EQ(w.riding().back().count, 5u);
}

TEST(DropWindows, RideOnTheBatchAsTheProtoSays) {
  Identity id;
  id.instance_id = 1;
  Counters c;
  DropWindow d;
  d.seq = 3;
  d.reason = DropReason::encode_failed;
  d.count = 12;
  d.first_unix_ns = 1'700'000'000'000'000'000ull;
  d.last_unix_ns = 1'700'000'001'000'000'000ull;
  d.closed = true;
  std::string wire;
  ASSERT_TRUE(encode_batch(id, c, 1, {}, &wire, {d}));
  v1::Batch b;
  ASSERT_TRUE(b.ParseFromString(wire));
  ASSERT_EQ(b.drop_windows_size(), 1);
  const auto& p = b.drop_windows(0);
  EXPECT_EQ(p.seq(), 3u);
  EXPECT_EQ(p.reason(), v1::ENCODE_FAILED);
  EXPECT_EQ(p.count(), 12u);
  EXPECT_EQ(p.first_unix_ns(), d.first_unix_ns);
  EXPECT_EQ(p.last_unix_ns(), d.last_unix_ns);
  EXPECT_TRUE(p.closed());
}

}  // namespace
