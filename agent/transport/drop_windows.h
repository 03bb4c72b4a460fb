// Drop windows: when the agent lost transactions, not only how many. The host's threads only stamp the
// first and last drop of each reason (core/counters.h, Counters::drop); the transport thread turns the
// stamps and the cumulative counts into windows — reason, count, [first drop, last drop] — and puts them
// on its batches (txray.v1.DropWindow), so that once the collector is reachable again it learns how many
// transactions were lost, why, and when (the collector stopped for 60 s under load).
//
// A window of a reason opens when its count grows and closes after kQuietNs without a drop of that
// reason. Open windows ride on every batch (their count and last drop still grow); a closed one rides
// until two batches carrying it went into a live connection at least kDeliverNs apart, since PUSH has
// no acknowledgement (the collector keeps one row per window and takes the largest count, the widest
// bounds, so repeats are harmless). Everything here runs on the transport thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/counters.h"

namespace txray::transport {

struct DropWindow {
  uint64_t seq = 0;  // per agent instance, from 1: the collector's key
  DropReason reason = DropReason::queue_full;
  uint64_t count = 0;
  uint64_t first_unix_ns = 0;
  uint64_t last_unix_ns = 0;
  bool closed = false;
};

class DropWindows {
 public:
  static constexpr uint64_t kQuietNs = 1'000'000'000;    // a second without a drop closes a reason's window
  static constexpr uint64_t kDeliverNs = 1'000'000'000;  // a closed window's two deliveries this far apart
  static constexpr size_t kMaxClosed = 32;  // closed windows not yet delivered; past it the open ones stay open

  // Opens, extends and closes windows from the counters (mono_now: clock::mono_ns()). `ending`: the
  // process is exiting, so no drop can follow: every open window closes now (else it would be stored
  // open for good, a second never passing).
  void update(Counters& c, uint64_t mono_now, bool ending = false);
  // What the next batch carries: every open window, and the closed ones not yet delivered.
  const std::vector<DropWindow>& riding() const { return riding_; }
  // The collector has not had something yet: a window changed since the last delivered batch, or a
  // closed one is still to be delivered (the transport then sends a batch without transactions).
  bool want_send() const { return changed_ || closed_ > 0; }
  // A window changed since the last delivered batch.
  bool changed() const { return changed_; }
  // The batch that carried riding() went into a live connection.
  void delivered(uint64_t mono_now);

 private:
  struct Open {
    uint64_t base = 0;         // the reason's count when its last window closed
    uint64_t seen = 0;         // its count at the last update()
    uint64_t changed_ns = 0;   // when update() last saw it grow (mono)
    int index = -1;            // its open window in riding_, -1 when none
  };
  struct Delivery {
    int sent = 0;
    uint64_t first_ns = 0;  // mono time of its first delivery
  };

  Open open_[kDropReasons];
  std::vector<DropWindow> riding_;
  std::vector<Delivery> delivery_;  // parallel to riding_
  size_t closed_ = 0;               // closed windows in riding_
  uint64_t seq_ = 0;
  uint64_t closed_at_unix_ns_ = 0;  // when a window last closed: the stamp of a drop whose own was cleared
  bool changed_ = false;
};

}  // namespace txray::transport
