// Clocks of the core. The wall clock (CLOCK_MONOTONIC, vDSO, ~25 ns) gives row times and elapsed; the CPU
// clock (CLOCK_THREAD_CPUTIME_ID, a ~0.5 us system call) is read only at profile row boundaries.
// Tests may replace both through set_clocks_for_test() to get deterministic times.
#pragma once

#include <cstdint>

namespace txray::clock {

uint64_t mono_ns();         // CLOCK_MONOTONIC
uint64_t thread_cpu_ns();   // CLOCK_THREAD_CPUTIME_ID
uint64_t process_cpu_ns();  // CLOCK_PROCESS_CPUTIME_ID (process mode: every thread's CPU counts)
uint64_t unix_ns();         // CLOCK_REALTIME, for transaction start times on the wire

struct Source {
  uint64_t (*mono)();
  uint64_t (*thread_cpu)();
  uint64_t (*process_cpu)();
};
// Replaces the clocks (nullptr members keep the real one); pass {} to restore all.
void set_clocks_for_test(const Source& s);

}  // namespace txray::clock
