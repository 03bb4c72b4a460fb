#include "service.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace txray::samples {

int run_until_signal(const std::function<void()>& serve) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  std::thread([serve] { serve(); }).detach();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

void serve_until_signal(const std::function<void()>& serve) {
  run_until_signal(serve);
  std::fflush(stdout);
  std::exit(0);
}

void announce(const std::string& name, const std::string& what, int port) {
  std::printf("%s listening on %s port %d\n", name.c_str(), what.c_str(), port);
  std::fflush(stdout);
}

long long thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace txray::samples
