#include "clock.h"

#include <ctime>

namespace txray::clock {
namespace {

uint64_t read(clockid_t id) {
  timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
uint64_t real_mono() { return read(CLOCK_MONOTONIC); }
uint64_t real_thread_cpu() { return read(CLOCK_THREAD_CPUTIME_ID); }
uint64_t real_process_cpu() { return read(CLOCK_PROCESS_CPUTIME_ID); }

Source g_src{real_mono, real_thread_cpu, real_process_cpu};

}  // namespace

uint64_t mono_ns() { return g_src.mono(); }
uint64_t thread_cpu_ns() { return g_src.thread_cpu(); }
uint64_t process_cpu_ns() { return g_src.process_cpu(); }
uint64_t unix_ns() { return read(CLOCK_REALTIME); }

void set_clocks_for_test(const Source& s) {
  g_src.mono = s.mono ? s.mono : real_mono;
  g_src.thread_cpu = s.thread_cpu ? s.thread_cpu : real_thread_cpu;
  g_src.process_cpu = s.process_cpu ? s.process_cpu : real_process_cpu;
}

}  // namespace txray::clock
