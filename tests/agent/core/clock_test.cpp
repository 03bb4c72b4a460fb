// The switch-checked CPU clock's fallback (core/clock.h): a page whose sequence never moves across a
// sleep (here a plain zeroed perf_event_mmap_page, as a kernel that does not rewrite it at a sched-in
// would leave it) turns the switch-checked clock off for the process, and every read takes the system
// call. (The working path, with a real perf ring: agent.perf.SwitchCheckedClock.*.)
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include "clock.h"

using namespace txray;

TEST(SwitchCheckedClock, APageNeverRewrittenAtASchedInTurnsItOff) {
  if (clock::switch_checked_state() != -1) GTEST_SKIP() << "decided earlier in this process";
  static perf_event_mmap_page page{};  // lock stays 0
  clock::set_thread_switch_page(&page);
  EXPECT_EQ(clock::switch_checked_state(), 0);
  uint64_t prev = 0;
  for (int i = 0; i < 10; ++i) {
    bool syscall = false;
    uint64_t v = clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
    EXPECT_TRUE(syscall);
    EXPECT_GE(v, prev);
    prev = v;
  }
  // Later pages are not even looked at.
  static perf_event_mmap_page other{};
  clock::set_thread_switch_page(&other);
  bool syscall = false;
  clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
  EXPECT_TRUE(syscall);
  clock::set_thread_switch_page(nullptr);
}
