// The perf_event_open CPU sampler without preload (cpu/perf_sampler.h, cpu/perf_unwind.h,
// transport/perf_drain.h): a transaction on a thread of its own burns CPU in a known function; the agent
// thread's side, run here by hand, gives the transaction the samples of its window, unwound through the
// burn function; the thread's ring leaves no descriptor in the table and is let go once the thread is
// gone. Skipped where perf_event_open is refused (a container's seccomp profile).
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include <unistd.h>

#include "cpu/clock.h"
#include "core/config.h"
#include "cpu/cpu_sampler.h"
#include "cpu/perf_sampler.h"
#include "core/transaction.h"
#include "transport/perf_drain.h"

using namespace txray;

namespace {

std::atomic<Transaction*> g_done{nullptr};
void keep(Transaction* t) { g_done.store(t); }

__attribute__((noinline)) uint64_t spin(uint64_t x, int n) {
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  asm volatile("" : "+r"(x));
  return x;
}

// Burns `ms` of thread CPU in spin(), called from here: the samples' stacks run through this function.
__attribute__((noinline)) uint64_t perf_test_burn(int ms) {
  timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  uint64_t x = 1;
  for (;;) {
    x = spin(x, 200000);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    if ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= ms) return x;
  }
}

int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (d && readdir(d)) ++n;
  if (d) closedir(d);
  return n;
}

bool started() {
  static bool ok = [] {
    Config c;
    c.cpu_sampler = Config::CpuSampler::perf;
    c.cpu_sample_ms = 1;
    set_config(c);
    cpu::init(c);
    return cpu::mechanism() == cpu::Mechanism::perf;
  }();
  return ok;
}

}  // namespace

TEST(PerfSampler, SamplesOfTheWindowUnwoundThroughTheBurnFunction) {
  if (!started()) GTEST_SKIP() << "perf sampler refused here: " << cpu::status();
  EXPECT_EQ(cpu::status().rfind("perf, every 1000 us of thread CPU", 0), 0u) << cpu::status();
  tx::set_sink(keep);
  int fds_before = open_fds(), fds_inside = -1;
  std::atomic<bool> stop{false};
  std::thread agent([&] {  // the agent thread's periodic drain
    while (!stop.load()) {
      cpu::perfdrain::poll();
      usleep(5000);
    }
  });
  std::thread th([&] {
    Transaction* t = tx::begin("burn", "http");
    fds_inside = open_fds();  // the ring is open now: its descriptor already closed
    perf_test_burn(60);
    tx::end(t, 0, "");
  });
  th.join();
  stop.store(true);
  agent.join();
  Transaction* t = g_done.exchange(nullptr);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(fds_inside, fds_before);
  ASSERT_NE(t->cpu.ring, nullptr);
  cpu::perfdrain::settle(*t);
  EXPECT_EQ(t->cpu.ring, nullptr);
  // ~60 samples at 1 ms of the thread's CPU each: the event counts the thread's own CPU time, so load
  // does not change the number much; the bound is a sixth of it (ring losses are counted apart).
  EXPECT_GE(t->cpu.samples.size(), 10u) << "lost " << cpu::perfdrain::lost_total();
  auto burn = reinterpret_cast<uintptr_t>(&perf_test_burn);
  size_t through = 0;
  for (const auto& s : t->cpu.samples) {
    EXPECT_GE(s.mono_ns, t->start_mono_ns);
    EXPECT_LE(s.mono_ns, t->cpu.end_mono_ns);
    ASSERT_GE(s.frames, 1u);
    for (uint32_t i = 1; i < s.frames; ++i)
      if (s.ip[i] > burn && s.ip[i] < burn + 512) {  // a return address into perf_test_burn's body
        ++through;
        break;
      }
  }
  EXPECT_GE(through * 10, t->cpu.samples.size() * 8) << through << " of " << t->cpu.samples.size();
  // The thread is gone and its transaction settled: the ring is unmapped and its slot free again.
  cpu::perfdrain::poll();
  EXPECT_EQ(cpu::perf::ring(0)->state.load(), cpu::perf::Ring::kFree);
  EXPECT_EQ(cpu::perf::ring(0)->refs.load(), 0);
  tx::recycle(t);
  tx::set_sink(nullptr);
}

TEST(PerfSampler, SamplesOutsideTransactionsAreDiscarded) {
  if (!started()) GTEST_SKIP() << "perf sampler refused here: " << cpu::status();
  tx::set_sink(keep);
  std::thread th([&] {
    Transaction* t = tx::begin("short", "http");
    tx::end(t, 0, "");
    perf_test_burn(30);  // after the transaction: nobody's samples
    cpu::perfdrain::poll();
  });
  th.join();
  Transaction* t = g_done.exchange(nullptr);
  ASSERT_NE(t, nullptr);
  cpu::perfdrain::settle(*t);
  EXPECT_LE(t->cpu.samples.size(), 1u);
  tx::recycle(t);
  tx::set_sink(nullptr);
}

// The switch-checked CPU clock (cpu/clock.h) on a thread with a perf ring: reads while the thread stays
// on its CPU take no system call and agree with the kernel's thread clock; a sleep (a sched-out and
// sched-in) makes the next read take the system call again; values never go back; and a transaction's
// rows count the system calls they took.
TEST(SwitchCheckedClock, FollowsTheKernelClockWithoutSystemCallsWhileOnCpu) {
  if (!started()) GTEST_SKIP() << "perf sampler refused here: " << cpu::status();
  tx::set_sink(keep);
  std::thread th([&] {
    Transaction* t = tx::begin("clock", "http");  // opens the thread's ring: the page is given here
    ASSERT_EQ(clock::switch_checked_state(), 1) << "this kernel did not rewrite the page at a sched-in";
    int fast = 0, reads = 0;
    uint64_t prev = 0, worst = 0;
    const uint64_t loop_t0 = clock::mono_ns();
    for (int i = 0; i < 2000; ++i) {
      bool syscall = true;
      uint64_t v = clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
      uint64_t kernel = clock::thread_cpu_ns();  // read right after: >= v unless v ran ahead
      EXPECT_GE(v, prev);
      prev = v;
      ++reads;
      if (!syscall) {
        ++fast;
        // A fast read is the anchor plus the wall time since: it can run ahead of the kernel's clock only
        // by time the thread did not run without being switched out (hypervisor steal, interrupts).
        if (v > kernel) worst = std::max(worst, v - kernel);
      }
      spin(1, 2000);
    }
    // Most reads are fast on a quiet machine; a loaded VM switches the thread out now and then, so how
    // many is printed and only "some" decides. How far a fast read ran ahead of the kernel's clock is
    // steal and interrupts: printed, bounded only by the loop's own wall time (what a broken read,
    // e.g. the wall clock itself, would exceed).
    printf("%d of %d reads switch-checked; a fast read ran at most %llu ns ahead of the kernel's clock\n", int(fast),
           int(reads), static_cast<unsigned long long>(worst));
    EXPECT_GE(fast, 1) << fast << " of " << reads << " reads were switch-checked";
    EXPECT_LT(worst, clock::mono_ns() - loop_t0) << "a fast read ran " << worst << " ns ahead of the kernel's thread clock";
    usleep(2000);  // a sched-out and sched-in
    bool syscall = false;
    uint64_t after = clock::thread_cpu_ns_at(clock::mono_ns(), &syscall);
    EXPECT_TRUE(syscall) << "the read after a sleep must take the system call";
    EXPECT_GE(after, prev);
    tx::end(t, 0, "");
  });
  th.join();
  Transaction* t = g_done.exchange(nullptr);
  ASSERT_NE(t, nullptr);
  // START's read anchored the new page (the system call); the loop's reads were not the transaction's;
  // END came right after the read that re-anchored past the sleep: switch-checked, unless the thread was
  // preempted in between (a loaded machine).
  EXPECT_GE(t->cpu_clock_syscalls, 1u);
  EXPECT_LE(t->cpu_clock_syscalls, 2u);
  EXPECT_GT(t->cpu_ns, 0u);
  cpu::perfdrain::settle(*t);
  tx::recycle(t);
  tx::set_sink(nullptr);
}
