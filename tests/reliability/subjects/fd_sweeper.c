// A service that, after its first request, closes every descriptor it does not need the way daemons
// and spawners do (close_range, closefrom, or a walk over /proc/self/fd), then reports what its next
// open() returns, and serves again.
//
// usage: fd_sweeper PORT close_range|closefrom|proc_walk
// prints: "next_open=N" after the sweep, and "served 2" at the end.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "subject.h"

static void proc_walk(int keep) {
  // Collect first, close after: closing while readdir() runs would close the directory's descriptor.
  int fds[4096], n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  int dfd = dirfd(d);
  for (struct dirent* e; (e = readdir(d)) != NULL && n < 4096;) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd > 2 && fd != keep && fd != dfd) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; ++i) close(fds[i]);
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int port = atoi(argv[1]);
  const char* how = argv[2];
  int lfd = subject_listen(port);
  if (lfd < 0) return 3;
  // Keep the listening socket where the sweep cannot reach it.
  int high = fcntl(lfd, F_DUPFD, 200);
  close(lfd);
  lfd = high;
  int served = 0;
  while (served < 1) {
    int c = subject_accept(lfd);
    if (subject_serve(c, "before\n") == 0) ++served;
    close(c);
  }
  if (strcmp(how, "close_range") == 0) {
    close_range(3, (unsigned)lfd - 1, 0);
    close_range((unsigned)lfd + 1, ~0U, 0);
  } else if (strcmp(how, "closefrom") == 0) {
    // closefrom has no "except": move the listening socket down first, as daemons do with dup2.
    dup2(lfd, 3);
    close(lfd);
    lfd = 3;
    closefrom(4);
  } else if (strcmp(how, "proc_walk") == 0) {
    proc_walk(lfd);
  } else {
    return 2;
  }
  int fd = open("/dev/null", O_RDONLY);
  printf("next_open=%d\n", fd);
  fflush(stdout);
  close(fd);
  while (served < 2) {
    int c = subject_accept(lfd);
    if (subject_serve(c, "after\n") == 0) ++served;
    close(c);
  }
  printf("served %d\n", served);
  return 0;
}
