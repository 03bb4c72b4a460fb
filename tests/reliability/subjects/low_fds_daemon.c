// A daemon that closes descriptors 0, 1 and 2 at start, then serves requests and writes a log line to
// 0, 1 and 2 after each one (ignoring the result, as daemons that lost their terminal do). Every
// response reports the descriptor its connection got and what the previous round's log writes returned,
// so a run under the agent can be compared with a bare run byte for byte.
//
// usage: low_fds_daemon PORT REQUESTS
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "subject.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int port = atoi(argv[1]), requests = atoi(argv[2]);
  signal(SIGPIPE, SIG_IGN);  // a write to the listening socket (it is fd 0 now) fails with EPIPE
  close(0);
  close(1);
  close(2);
  int lfd = subject_listen(port);
  if (lfd < 0) return 3;
  char log[256] = "none";
  for (int i = 0; i < requests + 1; ++i) {  // +1: the test's port probe
    int c = subject_accept(lfd);
    if (c < 0) return 4;
    char body[512];
    snprintf(body, sizeof body, "request %d listen=%d conn=%d log=%s\n", i, lfd, c, log);
    subject_serve(c, body);
    close(c);
    size_t n = 0;
    log[0] = 0;
    for (int fd = 0; fd <= 2; ++fd) {
      static const char line[] = "daemon: served a request\n";
      ssize_t w = write(fd, line, sizeof line - 1);
      n += (size_t)snprintf(log + n, sizeof log - n, "%s%d:%s", fd ? "," : "", fd,
                            w < 0 ? strerrorname_np(errno) : "ok");
    }
  }
  return 0;
}
