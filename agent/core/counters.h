// The agent's cumulative drop counters (DropCounters in the wire format). Incremented wherever the agent
// gives up on its own data; they ride on every batch so they reach the collector once it is back.
#pragma once

#include <atomic>
#include <cstdint>

namespace txray {

struct Counters {
  std::atomic<uint64_t> queue_full{0};
  std::atomic<uint64_t> send_failed{0};
  std::atomic<uint64_t> encode_failed{0};
  std::atomic<uint64_t> steps_summarized{0};
  std::atomic<uint64_t> internal_errors{0};

  void reset() {
    queue_full = 0;
    send_failed = 0;
    encode_failed = 0;
    steps_summarized = 0;
    internal_errors = 0;
  }
};

Counters& counters();

}  // namespace txray
