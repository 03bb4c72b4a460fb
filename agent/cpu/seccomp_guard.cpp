#include "cpu/seccomp_guard.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace txray::seccomp {
namespace {

std::once_flag g_once;
bool g_safe = true;
const char* g_why = "";

// 0 no filter, 2 a filter, -1 cannot tell.
int seccomp_mode() {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
      buf[n] = 0;
      if (const char* p = std::strstr(buf, "\nSeccomp:")) {
        p += 9;
        while (*p == ' ' || *p == '\t') ++p;
        if (*p >= '0' && *p <= '9') return *p - '0';
      }
    }
  }
  int m = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);  // 0, or 2 when a filter allows this call; kills with mode 1
  if (m >= 0) return m;
  return errno == EINVAL ? 0 : -1;  // EINVAL: a kernel without seccomp
}

// A vfork()ed child makes the call the agent would make (a too-short attribute: no event is made where
// it is allowed, E2BIG) and exits; killed by a signal means the filter kills. The child shares this
// process's memory until it exits: it only makes two system calls.
bool child_survives_perf_event_open() {
  static perf_event_attr attr;  // prepared before the vfork: the child writes nothing
  attr.size = 1;
  pid_t pid = vfork();
  if (pid == 0) {
    syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    _exit(0);
  }
  if (pid < 0) return false;  // cannot tell: not called
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r != pid) return false;  // SIGCHLD ignored (reaped already): cannot tell
  return WIFEXITED(status);
}

void decide() {
  int saved = errno;
  int mode = seccomp_mode();
  if (mode == 2 || mode < 0) {
    if (!child_survives_perf_event_open()) {
      g_safe = false;
      g_why = mode == 2 ? "a seccomp filter here kills perf_event_open: not called"
                        : "perf_event_open not called: could not tell whether it is safe here";
    }
  } else if (mode == 1) {
    g_safe = false;  // strict mode: read, write, _exit, sigreturn only
    g_why = "seccomp strict mode: perf_event_open not called";
  }
  errno = saved;
}

}  // namespace

bool perf_event_open_safe() {
  std::call_once(g_once, decide);
  return g_safe;
}

std::string why_not() {
  perf_event_open_safe();
  return g_why;
}

}  // namespace txray::seccomp
