// Load generator of the load-shedding test (test_shedding.py): `rate` transactions a second for `seconds`
// through the C API (txray_begin/txray_end, kind "api"), named "GET /item/<i % names>". Every
// `fail_every`-th fails (status 500, error "boom"), every `slow_every`-th (when not failing) is named
// "GET /slow" and sleeps `slow_ms` first; the rest end at once (a few microseconds). Prints one JSON line with what it sent.
//   txray-rel-shed-load SECONDS RATE FAIL_EVERY SLOW_EVERY SLOW_MS NAMES
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <txray/txray.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s SECONDS RATE FAIL_EVERY SLOW_EVERY SLOW_MS NAMES\n", argv[0]);
    return 2;
  }
  const double seconds = atof(argv[1]), rate = atof(argv[2]);
  const long fail_every = atol(argv[3]), slow_every = atol(argv[4]), slow_ms = atol(argv[5]), names = atol(argv[6]);
  long sent = 0, failed = 0, slow = 0, started = 0;
  const double t0 = now_s();
  char name[64];
  for (long i = 0;; ++i) {
    if ((i & 63) == 0) {
      const double t = now_s() - t0;
      if (t >= seconds) break;
      const double ahead = (double)i / rate - t;  // paced: sleep while ahead of the rate
      if (ahead > 0.001) usleep((useconds_t)(ahead * 1e6));
    }
    const int fail = fail_every > 0 && i % fail_every == fail_every - 1;
    const int is_slow = !fail && slow_every > 0 && i % slow_every == slow_every / 2;
    if (is_slow) snprintf(name, sizeof name, "GET /slow");
    else snprintf(name, sizeof name, "GET /item/%ld", i % names);
    started += txray_begin(name);
    if (is_slow) usleep((useconds_t)(slow_ms * 1000));
    txray_end(fail ? 500 : 200, fail ? "boom" : NULL);
    ++sent;
    failed += fail;
    slow += is_slow;
  }
  printf("{\"sent\": %ld, \"started\": %ld, \"failed\": %ld, \"slow\": %ld, \"seconds\": %.3f}\n", sent, started, failed,
         slow, now_s() - t0);
  return 0;
}
