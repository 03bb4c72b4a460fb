// The agent's cumulative drop counters (DropCounters in the wire format). Incremented wherever the agent
// gives up on its own data; they ride on every batch so they reach the collector once it is back.
//
// Transactions dropped (queue_full, send_failed, encode_failed) also stamp *when*: drop() keeps the
// wall-clock time of the first and the last drop of each reason since the transport thread last closed
// a drop window (transport/drop_windows.h turns these into windows [first, last] with a count). That is
// one vDSO clock read and two atomic stores on a path that only runs when a transaction is lost anyway;
// the host's ordinary path never touches them.
#pragma once

#include <atomic>
#include <cstdint>

namespace txray {

enum class DropReason : uint8_t { queue_full = 0, send_failed = 1, encode_failed = 2 };
inline constexpr int kDropReasons = 3;

// First and last drop (CLOCK_REALTIME ns) of one reason in the open window; 0 = none since it was reset.
struct DropStamps {
  std::atomic<uint64_t> first_ns{0};
  std::atomic<uint64_t> last_ns{0};

  void note(uint64_t now) {
    if (first_ns.load(std::memory_order_relaxed) == 0) {
      uint64_t zero = 0;
      first_ns.compare_exchange_strong(zero, now, std::memory_order_relaxed);
    }
    uint64_t last = last_ns.load(std::memory_order_relaxed);
    while (last < now && !last_ns.compare_exchange_weak(last, now, std::memory_order_relaxed)) {
    }
  }
};

struct Counters {
  std::atomic<uint64_t> queue_full{0};
  std::atomic<uint64_t> send_failed{0};
  std::atomic<uint64_t> encode_failed{0};
  std::atomic<uint64_t> steps_summarized{0};
  std::atomic<uint64_t> internal_errors{0};
  std::atomic<uint64_t> sampled_out{0};  // head sampling: counted, not sent (no loss; transport/sampler.h)
  // Connections whose protocol stream a wire parser (protocols/pg, protocols/mysql…) stopped following:
  // bytes it did not understand, TLS it cannot see inside, a message past its bounds. Their statements
  // are not rows from then on; the socket stays a socket.
  std::atomic<uint64_t> streams_unparsed{0};
  DropStamps stamps[kDropReasons];

  std::atomic<uint64_t>& dropped(DropReason r) {
    switch (r) {
      case DropReason::queue_full: return queue_full;
      case DropReason::send_failed: return send_failed;
      case DropReason::encode_failed: break;
    }
    return encode_failed;
  }
  const std::atomic<uint64_t>& dropped(DropReason r) const { return const_cast<Counters*>(this)->dropped(r); }

  // `n` transactions lost for reason `r` at wall-clock time `now_unix_ns`: the stamps first, then the
  // count (release), so that a reader who sees the count sees the stamps too.
  void drop(DropReason r, uint64_t n, uint64_t now_unix_ns) {
    stamps[int(r)].note(now_unix_ns);
    dropped(r).fetch_add(n, std::memory_order_release);
  }

  void reset() {
    queue_full = 0;
    send_failed = 0;
    encode_failed = 0;
    steps_summarized = 0;
    internal_errors = 0;
    sampled_out = 0;
    streams_unparsed = 0;
    for (auto& s : stamps) {
      s.first_ns = 0;
      s.last_ns = 0;
    }
  }
};

Counters& counters();

}  // namespace txray
