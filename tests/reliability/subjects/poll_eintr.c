// A program with no signal handler of its own that waits in poll() and select() a lot, under the signal
// CPU sampler (issue 11): poll, epoll_wait and select are never restarted after a signal handler
// (SA_RESTART does not apply to them), so a sample landing while the thread is inside one would make it
// return EINTR — which a program that never installed a handler has no reason to expect. Each wait
// watches many empty pipes with a 1 ms timeout, so most of the thread's CPU is spent in the kernel
// setting the wait up, where the sampler's timer expires. Every EINTR is counted (and printed).
//
// usage: poll_eintr ROUNDS PIPES      (each round one transaction: ROUNDS x 40 polls and 40 selects)
// prints: "waits N eintr E"
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <unistd.h>

#include "txray/txray.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ROUNDS PIPES\n", argv[0]);
    return 2;
  }
  int rounds = atoi(argv[1]), n = atoi(argv[2]);
  struct pollfd* pfd = calloc((size_t)n, sizeof *pfd);
  int maxfd = 0;
  for (int i = 0; i < n; ++i) {
    int p[2];
    if (pipe(p) != 0) {
      perror("pipe");
      return 2;
    }
    pfd[i].fd = p[0];
    pfd[i].events = POLLIN;
    if (p[0] > maxfd) maxfd = p[0];
  }
  long waits = 0, eintr = 0;
  for (int r = 0; r < rounds; ++r) {
    txray_begin("waits");
    for (int k = 0; k < 40; ++k) {
      ++waits;
      if (poll(pfd, (nfds_t)n, 1) < 0 && errno == EINTR) ++eintr;
      if (maxfd < FD_SETSIZE) {
        fd_set set;
        FD_ZERO(&set);
        for (int i = 0; i < n; ++i) FD_SET(pfd[i].fd, &set);
        struct timeval tv = {0, 1000};
        ++waits;
        if (select(maxfd + 1, &set, NULL, NULL, &tv) < 0 && errno == EINTR) ++eintr;
      }
    }
    txray_end(0, NULL);
  }
  printf("waits %ld eintr %ld\n", waits, eintr);
  return 0;
}
