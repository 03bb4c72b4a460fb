// A program with signals of its own, under the agent's CPU sampler (issue 11). One process: a server
// thread answering one request at a time, and the main thread calling it REQUESTS times, each call
// inside a transaction of its own (txray_begin); both burn about BURN_US of CPU per request, so the
// sampler's timer fires. Any call that fails with EINTR is fatal (the program says where and exits 99).
//
//   sigprof  the program profiles itself: SIGPROF every 1 ms of process CPU (setitimer(ITIMER_PROF),
//            SA_RESTART) all along; it must keep getting them, and never an EINTR;
//   take SIG after half the requests the program installs a handler of its own for signal SIG (the
//            sampler's signal) and counts what it receives from then on that it did not send itself:
//            the sampler must stop before the handler is in place. It then sends itself SIG once,
//            which its handler must get.
//
// usage: cpu_signals MODE REQUESTS BURN_US [SIG]
// prints: "requests N ok M" and the mode's own lines (the same bare and under the agent)
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "subject.h"
#include "txray/txray.h"

static const char* g_mode;
static int g_lfd;
static struct sockaddr_in g_addr;
static long g_burn_us;
static volatile sig_atomic_t g_prof;
static volatile sig_atomic_t g_foreign;  // SIG received from someone else than the program
static volatile sig_atomic_t g_own;      // SIG the program sent itself

static void fatal_eintr(const char* what) {
  fprintf(stderr, "EINTR in %s\n", what);
  fflush(stderr);
  _exit(99);
}

#define CHECK(call, what)                            \
  ({                                                 \
    __typeof__(call) r_ = (call);                    \
    if (r_ < 0 && errno == EINTR) fatal_eintr(what); \
    r_;                                              \
  })

static int is_mode(const char* m) { return strcmp(g_mode, m) == 0; }

static long long thread_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static unsigned long long burn(void) {
  volatile unsigned long long x = 1;
  long long end = thread_cpu_us() + g_burn_us;
  while (thread_cpu_us() < end)
    for (int i = 0; i < 20000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

static void* server(void* arg) {
  (void)arg;
  for (;;) {
    int c = CHECK(accept(g_lfd, NULL, NULL), "accept");
    if (c < 0) return NULL;
    char buf[2048];
    size_t got = 0;
    while (got < sizeof buf - 1) {
      ssize_t r = CHECK(read(c, buf + got, sizeof buf - 1 - got), "server read");
      if (r <= 0) break;
      got += (size_t)r;
      buf[got] = 0;
      if (strstr(buf, "\r\n\r\n")) break;
    }
    burn();
    char body[64];
    int bl = snprintf(body, sizeof body, "reply to %.20s\n", buf + 4);
    char head[128];
    int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", bl);
    CHECK(write(c, head, (size_t)hl), "server write");
    CHECK(write(c, body, (size_t)bl), "server write");
    CHECK(close(c), "server close");
  }
}

static int call(const char* path) {
  int s = CHECK(socket(AF_INET, SOCK_STREAM, 0), "socket");
  if (CHECK(connect(s, (struct sockaddr*)&g_addr, sizeof g_addr), "connect") != 0) return 0;
  char req[128];
  int rl = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
  if (CHECK(write(s, req, (size_t)rl), "client write") != rl) return 0;
  char buf[512];
  size_t got = 0;
  for (ssize_t r; (r = CHECK(read(s, buf + got, sizeof buf - 1 - got), "client read")) > 0;) got += (size_t)r;
  buf[got] = 0;
  CHECK(close(s), "client close");
  return strstr(buf, "\r\n\r\nreply to ") != NULL;
}

static void on_prof(int sig) {
  (void)sig;
  ++g_prof;
}

static void on_sig(int sig, siginfo_t* si, void* uc) {
  (void)sig;
  (void)uc;
  if (si->si_code == SI_QUEUE && si->si_pid == getpid() && si->si_value.sival_int == 4242) ++g_own;
  else ++g_foreign;
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  g_mode = argv[1];
  int n = atoi(argv[2]);
  g_burn_us = atol(argv[3]);
  int sig = argc > 4 ? atoi(argv[4]) : 0;
  g_lfd = subject_listen(0);
  if (g_lfd < 0) return 3;
  socklen_t al = sizeof g_addr;
  getsockname(g_lfd, (struct sockaddr*)&g_addr, &al);
  pthread_t th;
  pthread_create(&th, NULL, server, NULL);
  if (is_mode("sigprof")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &it, NULL);
  }
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    if (is_mode("take") && i == n / 2) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_sigaction = on_sig;
      sa.sa_flags = SA_RESTART | SA_SIGINFO;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, NULL);
    }
    char name[32], path[32];
    snprintf(name, sizeof name, "call %d", i);
    snprintf(path, sizeof path, "/r%d", i);
    txray_begin(name);
    burn();
    ok += call(path);
    txray_end(0, NULL);
  }
  printf("requests %d ok %d\n", n, ok);
  if (is_mode("sigprof")) {
    printf("own SIGPROF received: %s\n", g_prof > 0 ? "yes" : "no");
    fprintf(stderr, "sigprof %d\n", (int)g_prof);
  }
  if (is_mode("take")) {
    union sigval v = {.sival_int = 4242};
    sigqueue(getpid(), sig, v);
    struct timespec ts = {0, 50 * 1000 * 1000};
    while (!g_own && nanosleep(&ts, &ts) != 0) {
    }
    printf("own signal %d received: %d, from elsewhere: %d\n", sig, (int)g_own, (int)g_foreign);
  }
  return 0;
}
