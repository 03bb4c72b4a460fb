#include "core/hold.h"

#include <sched.h>
#include <time.h>

#include "core/counters.h"
#include "core/transaction.h"

namespace txray {

namespace {

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

}  // namespace

Hold::Hold(HoldFlag* f, uint64_t max_wait_ns) {
  if (!f) return;
  uint32_t me = tx::this_tid();
  if (f->try_take(me)) {
    f_ = f;
    return;
  }
  uint64_t start = 0;
  for (int i = 1;; ++i) {
    if (f->holder.load(std::memory_order_relaxed) == me) break;  // interrupted our own holding
    if (f->try_take(me)) {
      f_ = f;
      return;
    }
    if (i < 8) continue;  // the holder is running on another CPU: it lets go within a few hundred ns
    if (start == 0) start = mono_ns();
    else if (mono_ns() - start > max_wait_ns) break;
    if (i < 64) {
      sched_yield();
    } else {
      timespec ts{0, 50'000};  // the holder waits for a CPU: let it have this one
      nanosleep(&ts, nullptr);
    }
  }
  counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace txray
