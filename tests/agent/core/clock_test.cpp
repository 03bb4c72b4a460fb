// The switch-checked CPU clock's fallback (core/clock.h): a page whose sequence never moves across a
// sleep (here a plain zeroed perf_event_mmap_page, as a kernel that does not rewrite it at a sched-in
// would leave it) turns the switch-checked clock off for the process, and every read takes the system
// call. (The working path, with a real perf ring: agent.perf.SwitchCheckedClock.*.)
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>

#include "clock.h"
#include "config.h"

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

namespace {
const char* g_value = nullptr;
const char* clock_env(const char* k) { return !std::strcmp(k, "TXRAY_CPU_CLOCK") ? g_value : nullptr; }
}  // namespace

TEST(SwitchCheckedClock, Setting) {
  auto env = [](const char* v) {
    g_value = v;
    return parse_config(clock_env);
  };
  EXPECT_TRUE(parse_config([](const char*) -> const char* { return nullptr; }).fast_cpu_clock);  // default
  EXPECT_TRUE(env("auto").fast_cpu_clock);
  EXPECT_FALSE(env("syscall").fast_cpu_clock);
  Config bad = env("fast");
  EXPECT_TRUE(bad.fast_cpu_clock);
  EXPECT_NE(bad.problems.find("TXRAY_CPU_CLOCK='fast' is not auto|syscall"), std::string::npos) << bad.problems;
}
