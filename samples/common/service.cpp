#include "service.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace txray::samples {

namespace {

// A stop asked for between announce() and run_until_signal blocking the signals (a test that stops a
// server as soon as it has announced its port) is kept here and honoured there: with the default action
// the process would die of SIGTERM instead of exiting 0. Installed by announce() only, so that programs
// that merely use the clocks below keep the default actions.
// A thread started before the signals were blocked (a pool) may take one later: it hands it on to the
// thread in sigwait.
volatile sig_atomic_t g_early_stop = 0;
volatile sig_atomic_t g_waiter = 0;  // tid of the thread in sigwait

void note_early_stop(int sig) {
  g_early_stop = sig;
  if (pid_t waiter = g_waiter) syscall(SYS_tgkill, getpid(), waiter, sig);  // async-signal-safe
}

void defer_stop_signals() {
  static bool done = false;
  if (done) return;
  done = true;
  struct sigaction sa {};
  sa.sa_handler = note_early_stop;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

int run_until_signal(const std::function<void()>& serve) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  g_waiter = static_cast<sig_atomic_t>(syscall(SYS_gettid));
  if (g_early_stop) return g_early_stop;  // from here on a signal stays pending for sigwait
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
  defer_stop_signals();  // before the line a test waits for: a stop right after it must not kill us
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
