// The switch-checked CPU clock's fallback (cpu/clock.h): a page whose sequence never moves across a
// sleep (here a plain zeroed perf_event_mmap_page, as a kernel that does not rewrite it at a sched-in
// would leave it) turns the switch-checked clock off for the process, and every read takes the system
// call. (The working path, with a real perf ring: agent.cpu.SwitchCheckedClock.*.)
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>

#include "cpu/clock.h"
#include "core/config.h"

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

// The page's time conversion (cap_user_time, cpu/clock.h), checked against the kernel's documented
// formula with values a kernel gives: a 3 GHz TSC (mult/shift of 1/3 ns per cycle), a page updated at
// TSC cycle 9e9 (3 s) with time_offset = -3 s, so that the delta is the time since that update.
TEST(PageTaskClock, TimeSinceTheUpdateFromTheCycleCounter) {
  const uint16_t shift = 31;
  const uint32_t mult = uint32_t((uint64_t(1) << shift) / 3);  // ns = cyc * mult >> shift = cyc / 3
  const uint64_t at = 9'000'000'000ull;                        // the update's cycle count
  const uint64_t base = (at >> shift) * mult + (((at & ((1ull << shift) - 1)) * mult) >> shift);
  const uint64_t offset = uint64_t(0) - base;                  // time_offset = -(the update's time)
  EXPECT_EQ(clock::user_time_delta(at, shift, mult, offset, false, 0, 0), 0u);
  // 3,000 cycles later: 1,000 ns (to the rounding of mult).
  uint64_t d = clock::user_time_delta(at + 3000, shift, mult, offset, false, 0, 0);
  EXPECT_GE(d, 999u);
  EXPECT_LE(d, 1000u);
  // One second of cycles later: one second.
  d = clock::user_time_delta(at + 3'000'000'000ull, shift, mult, offset, false, 0, 0);
  EXPECT_NEAR(double(d), 1e9, 2.0);
  // cap_user_time_short: a 32-bit counter that wrapped since the update gives the same answer.
  const uint64_t mask = 0xffffffffull, cycles = at & ~mask;
  uint64_t wrapped = (at + 3000) & mask;
  EXPECT_EQ(clock::user_time_delta(wrapped, shift, mult, offset, true, cycles, mask),
            clock::user_time_delta(at + 3000, shift, mult, offset, false, 0, 0));
}

// A page without cap_user_time (this VM: kvm-clock) gives no value, and a page that did would be read.
TEST(PageTaskClock, OnlyWhereThePageAllowsIt) {
  static perf_event_mmap_page page{};
  uint64_t ns = 0;
  EXPECT_FALSE(clock::task_clock_from_page(&page, &ns));
#if defined(__x86_64__)
  page.cap_user_time = 1;
  page.time_running = 5'000'000;  // 5 ms of task clock at the update
  page.time_shift = 0;
  page.time_mult = 1;             // 1 ns per cycle
  page.time_offset = uint64_t(0) - __builtin_ia32_rdtsc();  // the update: now
  ASSERT_TRUE(clock::task_clock_from_page(&page, &ns));
  EXPECT_GE(ns, 5'000'000u);
  EXPECT_LT(ns, 5'000'000u + 1'000'000'000u);
  page.lock = 1;  // an update in progress, for ever: given up, not spun on
  EXPECT_FALSE(clock::task_clock_from_page(&page, &ns));
#endif
}

// A thread whose page allows user-space time reads: its first read is the system call (the pairing),
// every later one the page's task clock, on from that value, never going back; a forced system-call
// stretch (the calibration) is paired again after. (A synthetic page here: this VM has no such page.)
TEST(PageTaskClock, ReadsAfterThePairingSkipTheSystemCall) {
#if defined(__x86_64__)
  static perf_event_mmap_page page{};
  page.cap_user_time = 1;
  page.time_running = 1'000'000;
  page.time_shift = 0;
  page.time_mult = 1;
  page.time_offset = uint64_t(0) - __builtin_ia32_rdtsc();
  clock::set_thread_switch_page(&page);
  ASSERT_TRUE(clock::thread_uses_user_time());
  bool syscall = false;
  uint64_t first = clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
  EXPECT_TRUE(syscall);
  uint64_t prev = first;
  for (int i = 0; i < 100; ++i) {
    uint64_t v = clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
    EXPECT_FALSE(syscall) << i;
    EXPECT_GE(v, prev);
    prev = v;
  }
  EXPECT_GT(prev, first);
  clock::force_syscall_on_this_thread(true);
  clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
  EXPECT_TRUE(syscall);
  clock::force_syscall_on_this_thread(false);
  uint64_t again = clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
  EXPECT_TRUE(syscall);  // paired again
  EXPECT_GE(again, prev);
  clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
  EXPECT_FALSE(syscall);
  clock::set_thread_switch_page(nullptr);
  EXPECT_FALSE(clock::thread_uses_user_time());
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}
