// A classic daemon: fork, setsid, fork again, close every descriptor (close_range from 0), reopen 0-2 on
// /dev/null, then serve requests. Each response carries the descriptor numbers the daemon saw (its
// /dev/null, its listening socket, the connection), and after the last request it writes a report to
// REPORT (its stdout is /dev/null) and exits; the first process exits at once, as daemons' parents do.
//
// usage: double_fork_daemon PORT REQUESTS REPORT
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "subject.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  int port = atoi(argv[1]), requests = atoi(argv[2]);
  const char* report = argv[3];
  pid_t pid = fork();
  if (pid < 0) return 3;
  if (pid > 0) {
    int st = 0;
    waitpid(pid, &st, 0);  // the middle process exits right after its fork
    return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
  }
  setsid();
  if (fork() != 0) _exit(0);
  close_range(0, ~0U, 0);
  int null = open("/dev/null", O_RDWR);  // 0
  dup2(null, 1);
  dup2(null, 2);
  int lfd = subject_listen(port);
  if (lfd < 0) return 5;
  int served = 0, probes = 0;
  while (served < requests) {
    int c = subject_accept(lfd);
    if (c < 0) return 6;
    char body[128];
    snprintf(body, sizeof body, "request %d null=%d listen=%d conn=%d\n", served, null, lfd, c);
    int r = subject_serve(c, body);
    close(c);
    if (r == 0) ++served;
    else ++probes;
    printf("served %d\n", served);  // into /dev/null
  }
  FILE* f = fopen(report, "w");
  if (!f) return 7;
  fprintf(f, "served %d probes %d report_fd %d\n", served, probes, fileno(f));
  fclose(f);
  return 0;
}
