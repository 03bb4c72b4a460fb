// 1,000 forked children, each serving one request to its parent, one after the other: what a pre-fork or
// fork-per-request service costs when every child sends a transaction (the collector may be down).
//
// usage: forker CHILDREN
// prints: "served N"
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "subject.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int children = atoi(argv[1]);
  int lfd = subject_listen(0);
  if (lfd < 0) return 3;
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  getsockname(lfd, (struct sockaddr*)&a, &al);
  int served = 0;
  for (int i = 0; i < children; ++i) {
    pid_t pid = fork();
    if (pid < 0) return 4;
    if (pid == 0) {
      int c = subject_accept(lfd);
      int r = subject_serve(c, "child\n");
      close(c);
      exit(r == 0 ? 0 : 1);
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) return 5;
    static const char req[] = "GET /child HTTP/1.1\r\nHost: x\r\n\r\n";
    if (write(s, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) return 6;
    char buf[512];
    size_t got = 0;
    for (ssize_t r; (r = read(s, buf, sizeof buf)) > 0;) got += (size_t)r;
    close(s);
    int st = 0;
    waitpid(pid, &st, 0);
    if (got > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) ++served;
  }
  printf("served %d\n", served);
  return 0;
}
