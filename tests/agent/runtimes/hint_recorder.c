/* A stand-in for the agent in the runtime shims' own tests: preloaded instead of libtxray-agent.so, it
 * answers the hint protocol (docs/agent.md, "Runtimes") and writes, in the order they happen, every hint
 * and the first line of every HTTP request read or written on a socket to $TXRAY_HINT_LOG:
 *   H <tid> <message> <reply>
 *   R <tid> <fd> <request line>      (a read starting with "GET ")
 *   W <tid> <fd> <request line>      (a write starting with "GET ")
 * Replies: R and C get a new 16-hex-digit number (`R<fd>` 16 zeros while no request was read on fd),
 * everything else "OK". No transactions, no collector. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define HINT_FD 2147483600

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE* out;
static unsigned long long next_number = 1;
static unsigned char requests_read[65536]; /* fd -> a request was read on it */

static void emit(char kind, int fd, const char* data, size_t n) {
  size_t len = 0;
  while (len < n && len < 120 && data[len] != '\r' && data[len] != '\n') ++len;
  pthread_mutex_lock(&mu);
  if (!out) {
    const char* path = getenv("TXRAY_HINT_LOG");
    out = fopen(path ? path : "/dev/null", "a");
    if (out) setvbuf(out, NULL, _IOLBF, 0);
  }
  if (out) fprintf(out, "%c %ld %d %.*s\n", kind, (long)gettid(), fd, (int)len, data);
  pthread_mutex_unlock(&mu);
}

static int is_request(const void* p, size_t n) { return n >= 4 && memcmp(p, "GET ", 4) == 0; }

static void request_read(int fd, const void* buf, size_t n) {
  if (fd >= 0) requests_read[fd & 0xffff] = 1;
  emit('R', fd, buf, n);
}

static ssize_t answer(char* b, size_t n) {
  if (n != 32 || memchr(b, 0, 32) == NULL || b[0] == 0) {
    errno = EINVAL;
    return -1;
  }
  char msg[32];
  memcpy(msg, b, 32);
  memset(b, 0, 32);
  if (msg[0] == 'R' && strchr(msg, ':') == NULL && !requests_read[(unsigned)atoi(msg + 1) & 0xffff]) {
    strcpy(b, "0000000000000000");
  } else if (msg[0] == 'R' || msg[0] == 'C') {
    pthread_mutex_lock(&mu);
    unsigned long long v = next_number++;
    pthread_mutex_unlock(&mu);
    snprintf(b, 32, "%016llx", v);
  } else {
    strcpy(b, "OK");
  }
  char line[80];
  int len = snprintf(line, sizeof line, "%s %s", msg, b);
  emit('H', -1, line, (size_t)len);
  return 32;
}

ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  if (fd == HINT_FD) return answer((char*)buf, n);
  if (!real) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  if (is_request(buf, n)) emit('W', fd, buf, n);
  return real(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  static ssize_t (*real)(int, const struct iovec*, int);
  if (!real) real = (ssize_t(*)(int, const struct iovec*, int))dlsym(RTLD_NEXT, "writev");
  if (cnt > 0 && is_request(iov[0].iov_base, iov[0].iov_len)) emit('W', fd, iov[0].iov_base, iov[0].iov_len);
  return real(fd, iov, cnt);
}

ssize_t send(int fd, const void* buf, size_t n, int flags) {
  static ssize_t (*real)(int, const void*, size_t, int);
  if (!real) real = (ssize_t(*)(int, const void*, size_t, int))dlsym(RTLD_NEXT, "send");
  if (is_request(buf, n)) emit('W', fd, buf, n);
  return real(fd, buf, n, flags);
}

ssize_t read(int fd, void* buf, size_t n) {
  static ssize_t (*real)(int, void*, size_t);
  if (!real) real = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
  ssize_t r = real(fd, buf, n);
  if (r > 0 && is_request(buf, (size_t)r)) request_read(fd, buf, (size_t)r);
  return r;
}

ssize_t recv(int fd, void* buf, size_t n, int flags) {
  static ssize_t (*real)(int, void*, size_t, int);
  if (!real) real = (ssize_t(*)(int, void*, size_t, int))dlsym(RTLD_NEXT, "recv");
  ssize_t r = real(fd, buf, n, flags);
  if (r > 0 && is_request(buf, (size_t)r)) request_read(fd, buf, (size_t)r);
  return r;
}
