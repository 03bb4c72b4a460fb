// Forks with transactions open on both sides: the parent holds one transaction (txray_begin) across all
// its forks and calls each child over HTTP from inside it; each child serves that one request, then makes
// a transaction of its own (and every fifth child forks a grandchild from inside it, which makes one
// more), then exits. A child must not see the parent's transaction as its own (its txray_step() before
// any transaction of its own returns 0, as without the agent).
//
// usage: fork_tree CHILDREN
// prints: "children N ok M"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "subject.h"
#include "txray/txray.h"

static int child(int lfd, int i) {
  if (txray_step("a child's step before its own transaction") != 0) return 10;  // the parent's is not its own
  int c = subject_accept(lfd);
  if (c < 0) return 11;
  char body[32];
  snprintf(body, sizeof body, "child %d\n", i);
  if (subject_serve(c, body) != 0) return 12;
  close(c);
  char name[32];
  snprintf(name, sizeof name, "child %d", i);
  txray_begin(name);
  txray_step("child work");
  if (i % 5 == 0) {
    pid_t g = fork();
    if (g < 0) return 13;
    if (g == 0) {
      if (txray_step("a grandchild's step") != 0) _exit(14);
      snprintf(name, sizeof name, "grandchild %d", i);
      txray_begin(name);
      txray_end(0, NULL);
      exit(0);
    }
    int st = 0;
    waitpid(g, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 15;
  }
  txray_end(0, NULL);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int children = atoi(argv[1]);
  int lfd = subject_listen(0);
  if (lfd < 0) return 3;
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  getsockname(lfd, (struct sockaddr*)&a, &al);
  txray_begin("parent");
  txray_step("before the forks");
  int ok = 0;
  for (int i = 0; i < children; ++i) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 4;
    if (pid == 0) exit(child(lfd, i));
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) return 5;
    char req[64];
    int rl = snprintf(req, sizeof req, "GET /child/%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
    if (write(s, req, (size_t)rl) != rl) return 6;
    char buf[512];
    size_t got = 0;
    for (ssize_t r; (r = read(s, buf + got, sizeof buf - 1 - got)) > 0;) got += (size_t)r;
    buf[got] = 0;
    close(s);
    char want[32];
    snprintf(want, sizeof want, "\r\n\r\nchild %d\n", i);
    int st = 0;
    waitpid(pid, &st, 0);
    if (strstr(buf, want) && WIFEXITED(st) && WEXITSTATUS(st) == 0) ++ok;
    else fprintf(stderr, "child %d: status %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  txray_step("after the forks");
  txray_end(0, NULL);
  printf("children %d ok %d\n", children, ok);
  return 0;
}
