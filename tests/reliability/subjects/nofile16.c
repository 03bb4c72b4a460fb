// A service with RLIMIT_NOFILE 16: it serves a request (and waits for the agent's transport to be up), then opens as
// many sockets as it can, up to 12, reports the number, closes them and serves another request.
// Then it fills its table to the last descriptor, accepts one connection into the last free slot and
// serves it (the agent's transport, if not up yet, cannot get a descriptor then).
//
// usage: nofile16 PORT [fill-first]
//   default:     request, 12 sockets, request
//   fill-first:  table full before the first request is served (the transport starts with no room),
//                then sockets closed and two more requests
// prints: "sockets=N" and "served K"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "subject.h"

// linger_ms: how long the connection stays open after the response (the transaction ends with the
// response's last byte, so the agent's transport starts while the table is still full).
static int serve_one(int lfd, const char* body, int linger_ms) {
  for (;;) {
    int c = subject_accept(lfd);
    if (c < 0) return -1;
    int r = subject_serve(c, body);
    if (r == 0 && linger_ms) usleep((useconds_t)linger_ms * 1000);
    close(c);
    if (r == 0) return 0;
  }
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int port = atoi(argv[1]);
  int fill_first = argc > 2 && strcmp(argv[2], "fill-first") == 0;
  struct rlimit rl = {16, 16};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 3;
  int lfd = subject_listen(port);
  if (lfd < 0) return 4;
  int served = 0;
  if (fill_first) {
    // Fill the table, then free one slot for the connection: the first transaction ends with the table full.
    int held[16], n = 0;
    for (int fd; n < 16 && (fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0;) held[n++] = fd;
    if (n == 0) return 5;
    close(held[--n]);
    // Two requests with the table full.
    for (int i = 0; i < 2; ++i) {
      if (serve_one(lfd, "full\n", 300) != 0) return 6;
      ++served;
    }
    printf("sockets=%d\n", n + 1);
    for (int i = 0; i < n; ++i) close(held[i]);
  } else {
    if (serve_one(lfd, "first\n", 0) != 0) return 6;
    ++served;
    usleep(300 * 1000);  // the agent's transport is up by now (it starts with the first transaction)
    int held[12], n = 0;
    for (int fd; n < 12 && (fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0;) held[n++] = fd;
    printf("sockets=%d\n", n);
    for (int i = 0; i < n; ++i) close(held[i]);
  }
  fflush(stdout);
  for (int i = 0; i < 2; ++i) {
    if (serve_one(lfd, "after\n", 0) != 0) return 7;
    ++served;
  }
  printf("served %d\n", served);
  return 0;
}
