// The CPU sampler's cost per transaction, from CPU clocks (not wall time, which this shared machine
// makes too noisy for a 2% question): N transactions made with the C API on one thread, each doing
// WORK_K thousand iterations of CPU work (a multiply loop in the function `burn`), then the calling thread's and the whole
// process's CPU time (the agent thread's included: symbols, attribution, encoding) per transaction.
// usage: txray-bench-cpu-begin-end N WORK_K     (WORK_K thousand loop iterations per transaction; 2000
//        is about 2 ms here)                      prints "thread_us_per_tx P process_us_per_tx Q"
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "txray/txray.h"

static long long thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long process_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Fixed work (not "until the clock says"): the same instructions with and without the sampler.
__attribute__((noinline)) unsigned long long burn(long iterations) {
  volatile unsigned long long x = 1;
  for (long i = 0; i < iterations; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  long n = atol(argv[1]);
  long iters = atol(argv[2]) * 1000;
  long long t0 = thread_cpu_ns(), p0 = process_cpu_ns();
  for (long i = 0; i < n; ++i) {
    txray_begin("bench");
    burn(iters);
    txray_end(0, NULL);
  }
  long long t1 = thread_cpu_ns();
  // Give the agent thread time to finish the last batch (its CPU counts in the process's).
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  long long p1 = process_cpu_ns();
  printf("thread_us_per_tx %.3f process_us_per_tx %.3f\n", (double)(t1 - t0) / 1e3 / (double)n,
         (double)(p1 - p0) / 1e3 / (double)n);
  return 0;
}
