// Every way a program starts another: fork + exec, vfork + exec, vfork + _exit, posix_spawn (with file
// actions), popen and system, all from inside one transaction of the parent (txray_begin) that calls a
// back-end before, between and after. Each child is this program again ("child MODE PORT"): it makes one
// transaction with one call of its own. The vfork children first close the parent's connection to the
// back-end (their copy of it: a vfork child shares the parent's memory, so the agent's state must stay
// untouched), and the parent then writes its request on that very connection.
//
// usage: spawner PORT            (a back-end answering GET PATH with "ok PATH")
// prints: one line per child ("MODE exit N"), the popen child's line, then "parent calls N ok M"
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "subject.h"
#include "txray/txray.h"

extern char** environ;
static struct sockaddr_in g_backend;
static char g_exe[4096];

static int dial(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&g_backend, sizeof g_backend) != 0) return -1;
  return s;
}

// GET path on connection s (closed here); 1 when the body is "ok <path>".
static int get_on(int s, const char* path) {
  if (s < 0) return 0;
  char req[256];
  int rl = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
  if (write(s, req, (size_t)rl) != rl) {
    close(s);
    return 0;
  }
  char buf[1024];
  size_t got = 0;
  for (ssize_t r; got < sizeof buf - 1 && (r = read(s, buf + got, sizeof buf - 1 - got)) > 0;) got += (size_t)r;
  buf[got] = 0;
  close(s);
  char want[300];
  snprintf(want, sizeof want, "\r\n\r\nok %s", path);
  return strstr(buf, want) != NULL;
}

static int get(const char* path) { return get_on(dial(), path); }

static int child(const char* mode) {
  char name[64], path[64];
  snprintf(name, sizeof name, "child %s", mode);
  snprintf(path, sizeof path, "/child/%s", mode);
  txray_begin(name);
  int ok = get(path);
  txray_end(ok ? 0 : 1, ok ? NULL : "call failed");
  printf("child %s %s\n", mode, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

static int status_of(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

int main(int argc, char** argv) {
  const char* port = argc == 2 ? argv[1] : argc == 4 ? argv[3] : NULL;
  if (!port) return 2;
  memset(&g_backend, 0, sizeof g_backend);
  g_backend.sin_family = AF_INET;
  g_backend.sin_port = htons((unsigned short)atoi(port));
  g_backend.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (argc == 4) return child(argv[2]);
  ssize_t el = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
  if (el <= 0) return 3;
  g_exe[el] = 0;

  txray_begin("parent");
  int calls = 0, ok = 0;
  ok += get("/parent/before"), ++calls;

  char* fork_args[] = {g_exe, "child", "fork-exec", (char*)port, NULL};
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    execv(g_exe, fork_args);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  printf("fork-exec exit %d\n", status_of(st));

  const char* vmodes[] = {"vfork-exec", "vfork-exit"};
  for (int m = 0; m < 2; ++m) {
    int s = dial();  // the child closes its copy; the parent then uses it
    char* vargs[] = {g_exe, "child", (char*)vmodes[m], (char*)port, NULL};
    fflush(stdout);
    pid = vfork();
    if (pid == 0) {
      close(s);
      if (m == 0) execv(g_exe, vargs);
      _exit(m == 0 ? 127 : 7);
    }
    waitpid(pid, &st, 0);
    printf("%s exit %d\n", vmodes[m], status_of(st));
    char path[64];
    snprintf(path, sizeof path, "/parent/after-%s", vmodes[m]);
    ok += get_on(s, path), ++calls;
  }

  int s = dial();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, s);
  char* sargs[] = {g_exe, "child", "posix_spawn", (char*)port, NULL};
  fflush(stdout);
  if (posix_spawn(&pid, g_exe, &fa, NULL, sargs, environ) != 0) return 4;
  posix_spawn_file_actions_destroy(&fa);
  waitpid(pid, &st, 0);
  printf("posix_spawn exit %d\n", status_of(st));
  ok += get_on(s, "/parent/after-posix_spawn"), ++calls;

  char cmd[4200];
  snprintf(cmd, sizeof cmd, "%s child popen %s", g_exe, port);
  fflush(stdout);
  FILE* p = popen(cmd, "r");
  if (!p) return 5;
  char line[256];
  while (fgets(line, sizeof line, p)) printf("popen read: %s", line);
  printf("popen exit %d\n", status_of(pclose(p)));

  snprintf(cmd, sizeof cmd, "%s child system %s", g_exe, port);
  fflush(stdout);
  printf("system exit %d\n", status_of(system(cmd)));

  ok += get("/parent/after"), ++calls;
  txray_end(0, NULL);
  printf("parent calls %d ok %d\n", calls, ok);
  return 0;
}
