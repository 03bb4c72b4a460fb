// Short-lived threads, some of which pthread_exit() in the middle of a request: a thread-per-connection
// server whose handler threads each serve one request, and client threads that each make one call inside
// a transaction of their own (txray_begin), all in one process, in waves of WAVE threads of each kind.
//
// Request i (handler side, by i % 4):
//   0  answered with a Content-Length, connection closed: the ordinary case;
//   1  answered without a Content-Length (the body ends when the connection closes), then the handler
//      hands the connection to the reaper and calls pthread_exit(): the request is still open when its
//      thread is gone, and the reaper (another thread) ends it by closing the connection after joining
//      the handler (whose stack may be unmapped by then);
//   2  the same, but pthread_exit() from a nested function before the body is written.
// Client i calls pthread_exit() inside its transaction, before txray_end(), when i % 4 == 3.
//
// usage: thread_churn REQUESTS [WAVE]
// prints: "requests N ok M" (stdout); RSS figures on stderr ("rss_kb after_first_wave=A end=B").
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subject.h"
#include "txray/txray.h"

static int g_lfd;
static struct sockaddr_in g_addr;
static int* g_ok;

// The reaper: joins a handler thread, then closes the connection it left open.
static int g_reap[2];  // a pipe of (pthread_t, fd) records
struct reap {
  pthread_t th;
  int fd;
};

static long rss_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
  fclose(f);
  return kb;
}

static int read_head(int c, char* buf, size_t cap) {
  size_t got = 0;
  while (got < cap - 1) {
    ssize_t r = read(c, buf + got, cap - 1 - got);
    if (r <= 0) return -1;
    got += (size_t)r;
    buf[got] = 0;
    if (strstr(buf, "\r\n\r\n")) return 0;
  }
  return -1;
}

static void write_all(int c, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(c, p, n);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

__attribute__((noreturn)) static void leave_midway(int c) {
  struct reap r = {pthread_self(), c};
  if (write(g_reap[1], &r, sizeof r) != sizeof r) abort();
  pthread_exit(NULL);
}

__attribute__((noreturn)) static void nested_exit(int c, int depth) {
  if (depth == 0) leave_midway(c);
  nested_exit(c, depth - 1);
}

static void* handler(void* arg) {
  int c = (int)(long)arg;
  char buf[2048];
  if (read_head(c, buf, sizeof buf) != 0) {
    close(c);
    pthread_detach(pthread_self());
    return NULL;
  }
  int i = atoi(buf + 5);  // "GET /<i> HTTP/1.1"
  char body[64];
  int bl = snprintf(body, sizeof body, "reply %d\n", i);
  char head[160];
  if (i % 4 == 0) {
    int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", bl);
    write_all(c, head, (size_t)hl);
    write_all(c, body, (size_t)bl);
    close(c);
    pthread_detach(pthread_self());
    return NULL;
  }
  int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
  write_all(c, head, (size_t)hl);
  if (i % 4 == 2) nested_exit(c, 3);  // nothing of the body written
  write_all(c, body, (size_t)bl);
  leave_midway(c);
  return NULL;
}

static void* acceptor(void* arg) {
  (void)arg;
  for (;;) {
    int c = subject_accept(g_lfd);
    if (c < 0) return NULL;
    pthread_t th;
    if (pthread_create(&th, NULL, handler, (void*)(long)c) != 0) abort();
  }
}

// Handlers that return detach themselves; the ones that leave midway send their record: the reaper joins
// the thread, then closes the connection it left open.
static void* reaper(void* arg) {
  (void)arg;
  struct reap r;
  while (read(g_reap[0], &r, sizeof r) == sizeof r) {
    pthread_join(r.th, NULL);
    close(r.fd);
  }
  return NULL;
}

static void* client(void* arg) {
  int i = (int)(long)arg;
  char name[32];
  snprintf(name, sizeof name, "client %d", i);
  txray_begin(name);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&g_addr, sizeof g_addr) != 0) abort();
  char req[64];
  int rl = snprintf(req, sizeof req, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
  write_all(s, req, (size_t)rl);
  char buf[512];
  size_t got = 0;
  for (ssize_t r; (r = read(s, buf + got, sizeof buf - 1 - got)) > 0;) got += (size_t)r;
  buf[got] = 0;
  close(s);
  char want[64];
  snprintf(want, sizeof want, "\r\n\r\nreply %d\n", i);
  const char* empty = "\r\n\r\n";
  const char* expect = i % 4 == 2 ? empty : want;
  size_t el = strlen(expect);
  g_ok[i] = strncmp(buf, "HTTP/1.1 200 OK", 15) == 0 && got >= el && strcmp(buf + got - el, expect) == 0;
  if (i % 4 == 3) pthread_exit(NULL);  // inside its transaction
  txray_end(0, NULL);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int n = atoi(argv[1]);
  int wave = argc > 2 ? atoi(argv[2]) : 32;
  g_ok = calloc((size_t)n, sizeof *g_ok);
  g_lfd = subject_listen(0);
  if (g_lfd < 0 || pipe(g_reap) != 0) return 3;
  socklen_t al = sizeof g_addr;
  getsockname(g_lfd, (struct sockaddr*)&g_addr, &al);
  pthread_t acc, rea;
  pthread_create(&acc, NULL, acceptor, NULL);
  pthread_create(&rea, NULL, reaper, NULL);
  long rss_first = -1;
  pthread_t* th = calloc((size_t)wave, sizeof *th);
  for (int base = 0; base < n; base += wave) {
    int k = n - base < wave ? n - base : wave;
    for (int j = 0; j < k; ++j)
      if (pthread_create(&th[j], NULL, client, (void*)(long)(base + j)) != 0) abort();
    for (int j = 0; j < k; ++j) pthread_join(th[j], NULL);
    if (base == 0) rss_first = rss_kb();
  }
  int ok = 0;
  for (int i = 0; i < n; ++i) ok += g_ok[i];
  // Let the reaper close the last connections (their requests end there) before the process exits.
  usleep(100000);
  fprintf(stderr, "rss_kb after_first_wave=%ld end=%ld\n", rss_first, rss_kb());
  printf("requests %d ok %d\n", n, ok);
  fflush(stdout);
  return 0;
}
