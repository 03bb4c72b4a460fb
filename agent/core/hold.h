// A flag one thread at a time holds while it works on state a hook shares with other threads: an
// inbound or outbound connection's parser (a server may read a connection on one thread and write it
// on another), the span table (span_owner.cpp).
//
// Not a mutex, for two reasons:
//  - a signal handler that interrupts the holder and comes back to the same state must never deadlock:
//    the holder being the calling thread gives up at once;
//  - a hook must never hang its host: the wait is bounded by time.
// The holder keeps the flag for microseconds, unless it was descheduled in between; a waiter that gave
// up would skip an event, and for a connection's parser a skipped read or write is fatal (an HTTP/2
// connection's header compression state goes out of step and the connection is no longer followed). So
// the waiter spins a little, then yields, then sleeps in short steps for up to `max_wait_ns` — long
// enough for a preempted holder on a loaded machine to run again. A give-up is counted
// (internal_errors).
#pragma once

#include <atomic>
#include <cstdint>

namespace txray {

struct HoldFlag {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  std::atomic<uint32_t> holder{0};  // tid of the thread holding `busy`, 0 when free

  // One attempt, no wait.
  bool try_take(uint32_t me) {
    if (busy.test_and_set(std::memory_order_acquire)) return false;
    holder.store(me, std::memory_order_relaxed);
    return true;
  }
  void release() {
    holder.store(0, std::memory_order_relaxed);
    busy.clear(std::memory_order_release);
  }
  // In a forked child: a parent thread that held it does not exist there.
  void reset_after_fork() {
    holder.store(0, std::memory_order_relaxed);
    busy.clear(std::memory_order_relaxed);
  }
};

class Hold {
 public:
  static constexpr uint64_t kDefaultWaitNs = 200'000'000;  // 200 ms: a preempted holder has run again

  explicit Hold(HoldFlag* f, uint64_t max_wait_ns = kDefaultWaitNs);
  ~Hold() {
    if (f_) f_->release();
  }
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;
  explicit operator bool() const { return f_ != nullptr; }

 private:
  HoldFlag* f_ = nullptr;
};

}  // namespace txray
