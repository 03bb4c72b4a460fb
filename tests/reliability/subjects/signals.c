// Signals and abrupt exits. One process: a server thread answering one request at a time, and the main
// thread calling it REQUESTS times, each call inside a transaction of its own (txray_begin), then:
//
//   storm    SIGALRM every 100 us (setitimer, SA_RESTART) all along, and any call that fails with EINTR is
//            fatal (the program says where and exits 99): the agent must not make a call fail with EINTR
//            that would not without it, nor make the program's own calls interruptible;
//   blocked  every signal blocked in main() before any thread exists; between calls the program sends
//            itself SIGUSR1 and 16 queued SIGRTMIN and takes them with sigtimedwait; at the end it says
//            whether every thread of the process still blocks everything and which signals the process
//            catches (a thread of the agent must neither take a signal nor change the dispositions);
//   exit-handler  the last request's handler writes part of its response, then raises SIGUSR1, whose
//            handler calls exit(3) (the response ends when the process exits);
//   exit-storm    SIGALRM every 100 us whose handler calls exit(5) at the 2,000th signal, whatever the
//            program (busy with calls, in or out of the agent) is doing then: it must exit, not hang;
//   _exit    the last request's handler writes part of its response and calls _exit(9) (50 ms after the
//            requests before it).
//
// usage: signals MODE REQUESTS
// prints: "requests N ok M" and the mode's own lines
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
static volatile sig_atomic_t g_alarms;

static void fatal_eintr(const char* what) {
  fprintf(stderr, "EINTR in %s\n", what);
  fflush(stderr);
  _exit(99);
}

// A call that failed: EINTR is fatal in this program; anything else is returned.
#define CHECK(call, what)                                     \
  ({                                                          \
    __typeof__(call) r_ = (call);                             \
    if (r_ < 0 && errno == EINTR) fatal_eintr(what);          \
    r_;                                                       \
  })

static void on_alarm(int sig) {
  (void)sig;
  ++g_alarms;
}

static void on_alarm_exit(int sig) {
  (void)sig;
  if (++g_alarms == 2000) exit(5);
}

static void on_usr1_exit(int sig) {
  (void)sig;
  exit(3);
}

static int is_mode(const char* m) { return strcmp(g_mode, m) == 0; }

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
    if (strncmp(buf, "GET /last ", 10) == 0 && (is_mode("exit-handler") || is_mode("_exit"))) {
      static const char part[] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart of the ";
      CHECK(write(c, part, sizeof part - 1), "server write");
      if (is_mode("_exit")) _exit(9);
      raise(SIGUSR1);
    }
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

static void start_timer(void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &it, NULL);
}

// Each signal in `want` (SIGUSR1 once, SIGRTMIN 16 times) sent to the process and taken synchronously.
static int take_signals(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGRTMIN);
  kill(getpid(), SIGUSR1);
  for (int i = 0; i < 16; ++i) {
    union sigval v = {.sival_int = i};
    sigqueue(getpid(), SIGRTMIN, v);
  }
  int usr1 = 0, rt = 0;
  struct timespec ts = {5, 0};
  for (int i = 0; i < 17; ++i) {
    siginfo_t si;
    int s = sigtimedwait(&set, &si, &ts);
    if (s == SIGUSR1) ++usr1;
    else if (s == SIGRTMIN && si.si_value.sival_int == rt) ++rt;
  }
  return usr1 == 1 && rt == 16;
}

// "tasks N with every signal blocked M" and the process's caught signals, from /proc.
static void report_masks(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "grep -h SigBlk /proc/%d/task/*/status", (int)getpid());
  FILE* p = popen(cmd, "r");
  int tasks = 0, full = 0;
  char line[128];
  while (p && fgets(line, sizeof line, p)) {
    ++tasks;
    // Everything but SIGKILL, SIGSTOP and the two signals glibc reserves (32, 33) is blocked.
    if (strstr(line, "fffffffe7ffbfeff") || strstr(line, "fffffffffffbfeff")) ++full;
  }
  if (p) pclose(p);
  FILE* f = fopen("/proc/self/status", "r");
  char cgt[64] = "?";
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "SigCgt: %63s", cgt) == 1) break;
  if (f) fclose(f);
  printf("threads with every signal blocked: %s\n", tasks == full ? "all" : "NOT ALL");
  printf("caught signals: %s\n", cgt);
  fprintf(stderr, "tasks %d, fully blocked %d\n", tasks, full);
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  g_mode = argv[1];
  int n = atoi(argv[2]);
  if (is_mode("blocked")) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
  }
  g_lfd = subject_listen(0);
  if (g_lfd < 0) return 3;
  socklen_t al = sizeof g_addr;
  getsockname(g_lfd, (struct sockaddr*)&g_addr, &al);
  pthread_t th;
  pthread_create(&th, NULL, server, NULL);
  if (is_mode("storm")) start_timer(on_alarm);
  if (is_mode("exit-storm")) start_timer(on_alarm_exit);
  if (is_mode("exit-handler")) signal(SIGUSR1, on_usr1_exit);
  int ok = 0, sig_ok = 0;
  for (int i = 0; i < n || is_mode("exit-storm"); ++i) {
    char name[32], path[32];
    snprintf(name, sizeof name, "call %d", i);
    snprintf(path, sizeof path, "/r%d", i);
    txray_begin(name);
    ok += call(path);
    txray_end(0, NULL);
    if (is_mode("blocked")) sig_ok += take_signals();
  }
  printf("requests %d ok %d\n", n, ok);
  if (is_mode("storm")) fprintf(stderr, "alarms %d\n", (int)g_alarms);
  if (is_mode("blocked")) {
    printf("signals taken as sent: %d of %d rounds\n", sig_ok, n);
    report_masks();
  }
  if (is_mode("exit-handler") || is_mode("_exit")) {
    fflush(stdout);
    // The requests so far are finished: give the agent thread (which looks at its queue every 5 ms) the
    // time to send them. What _exit() cuts short is the last request alone.
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    txray_begin("last call");
    call("/last");  // the process ends during this call
    return 1;
  }
  return 0;
}
