// A fork-per-connection server whose children answer and then exit() without closing the connection
// (the kernel closes it at exit, which is what the client waits for). The responses have no
// Content-Length: the body ends when the connection closes, i.e. when the child exits.
//
// usage: fork_exit_server PORT CONNECTIONS
// prints: "served N"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "subject.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int port = atoi(argv[1]), conns = atoi(argv[2]);
  int lfd = subject_listen(port);
  if (lfd < 0) return 3;
  int served = 0;
  for (int i = 0; i < conns + 1; ++i) {  // +1: the test's port probe
    int c = subject_accept(lfd);
    if (c < 0) return 4;
    pid_t pid = fork();
    if (pid == 0) {
      close(lfd);
      char body[64];
      snprintf(body, sizeof body, "child %d\n", i);
      int r = subject_respond(c, body, 1);
      exit(r < 0 ? 1 : 0);  // no close(c): exit() ends the response
    }
    close(c);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ++served;
  }
  printf("served %d\n", served - 1);
  return 0;
}
