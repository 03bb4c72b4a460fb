// What one read of the thread CPU clock costs on this host, the denominator of the agent's per-request
// cost target (issue 14: added CPU per request <= 1.5x two such reads). Prints one line per path:
//   clock_gettime  CLOCK_THREAD_CPUTIME_ID (a system call on this kind of VM: no vDSO path)
//   perf_read      read() of a perf_event task-clock descriptor (a system call too)
//   perf_mmap      the task clock read from its mmap page in user space (rdtsc + the page's time
//                  fields: the agent's own read, cpu/clock.h), only where the page says
//                  cap_user_time = 1 (then the agent reads every thread's CPU clock so); "unavailable"
//                  otherwise (this development VM: kvm-clock)
//   switch_checked the agent's own read (cpu/clock.h): the page's sequence and a CLOCK_MONOTONIC read
//                  while the thread has not been switched out (the system call when it has; a tight
//                  loop on a quiet CPU is rarely switched out, so this is the fast path's price)
// Each figure is the median over 31 batches of N reads, in ns per read.
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "cpu/clock.h"

namespace {

uint64_t mono() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

template <typename F>
double median_ns(F read_once, int n) {
  std::vector<double> v;
  volatile uint64_t sink = 0;
  for (int b = 0; b < 31; ++b) {
    uint64_t t0 = mono();
    for (int i = 0; i < n; ++i) sink = sink + read_once();
    v.push_back(double(mono() - t0) / n);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

uint64_t thread_cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

int g_perf_fd = -1;
perf_event_mmap_page* g_page = nullptr;

uint64_t switch_checked() {
  bool syscall = false;
  return txray::clock::thread_cpu_ns_at(txray::clock::mono_ns(), &syscall);
}

uint64_t perf_read() {
  uint64_t v = 0;
  if (::read(g_perf_fd, &v, sizeof v) != sizeof v) return 0;
  return v;
}

// The task clock from user space (cap_user_time): the agent's own read of it (cpu/clock.h).
uint64_t perf_mmap() {
  uint64_t v = 0;
  txray::clock::task_clock_from_page(g_page, &v);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  std::printf("clock_gettime %.1f\n", median_ns(thread_cpu, n));
  perf_event_attr a{};
  a.type = PERF_TYPE_SOFTWARE;
  a.size = sizeof a;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.exclude_kernel = 0;
  g_perf_fd = int(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
  if (g_perf_fd < 0) {
    std::printf("perf_read unavailable (perf_event_open refused)\nperf_mmap unavailable (perf_event_open refused)\n");
    return 0;
  }
  std::printf("perf_read %.1f\n", median_ns(perf_read, n));
  void* p = mmap(nullptr, size_t(sysconf(_SC_PAGESIZE)), PROT_READ, MAP_SHARED, g_perf_fd, 0);
  if (p == MAP_FAILED) {
    std::printf("perf_mmap unavailable (mmap refused)\n");
    return 0;
  }
  g_page = static_cast<perf_event_mmap_page*>(p);
  txray::clock::set_thread_switch_page(g_page);
  if (txray::clock::thread_uses_user_time())  // the agent takes the page's task clock: every read cheap
    std::printf("switch_checked unavailable (the agent reads the page's task clock here: see perf_mmap)\n");
  else if (txray::clock::switch_checked_state() == 1)
    std::printf("switch_checked %.1f\n", median_ns(switch_checked, n));
  else
    std::printf("switch_checked unavailable (the page is not rewritten at a sched-in)\n");
  txray::clock::set_thread_switch_page(nullptr);
  if (!g_page->cap_user_time) {
    std::printf("perf_mmap unavailable (cap_user_time = 0)\n");
    return 0;
  }
  std::printf("perf_mmap %.1f\n", median_ns(perf_mmap, n));
  return 0;
}
