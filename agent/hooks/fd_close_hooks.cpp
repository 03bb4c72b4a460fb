// close_range(), closefrom(), dup2() and dup3(): programs that close every descriptor (daemons,
// spawners) or dup2() /dev/null over every one they did not open must not close or replace the agent's
// own (PITFALLS 12). close_range/closefrom are split around them; a dup2 onto one is taken as
// done, the way close() on one is (socket_hooks.cpp). The agent's descriptor sits at the top of the
// table (agent/transport/own_fd.h), where only such sweeps reach it.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "protocols/dispatch/socket_events.h"
#include "hooks/hook.h"

namespace {

using txray::FdKind;
namespace fds = txray::fds;

// Closes [first, last] except the agent's descriptors, with the real close_range. Bookkeeping for the
// program's tracked sockets happens first (SOCKET_CLOSE rows, unfinished responses).
int close_range_keeping_agent(unsigned first, unsigned last, int flags,
                              int (*real)(unsigned, unsigned, int)) {
  // A vfork()/posix_spawn child shares the parent's memory but has its own descriptor table: it may
  // close anything, and must not touch the agent's state.
  if (!txray::hooks::in_this_process()) return real(first, last, flags);
  int lo = int(first > unsigned(INT_MAX) ? INT_MAX : first), hi = int(last > unsigned(INT_MAX) ? INT_MAX : last);
  fds::note_program_close(lo, hi);
  struct NoteAgain {  // and after: the agent may have begun making a socket meanwhile
    int lo, hi;
    ~NoteAgain() { fds::note_program_close(lo, hi); }
  } again{lo, hi};
  std::vector<unsigned> agent_fds;
  bool host = txray::host_thread_enabled();
  unsigned top = last > unsigned(INT_MAX) ? unsigned(INT_MAX) : last;
  fds::for_each_used(int(first > unsigned(INT_MAX) ? INT_MAX : first), int(top), [&](int fd, txray::FdSlot& s) {
    FdKind k = s.kind.load(std::memory_order_relaxed);
    if (k == FdKind::agent) agent_fds.push_back(unsigned(fd));
    else if (host && !(flags & CLOSE_RANGE_CLOEXEC)) txray::sock::on_close(fd);
  });
  if (agent_fds.empty() || txray::hooks::t_kind == txray::ThreadKind::agent) return real(first, last, flags);
  int rc = 0, err = 0;
  unsigned from = first;
  for (unsigned a : agent_fds) {
    if (a > from && real(from, a - 1, flags) != 0 && rc == 0) {
      rc = -1;
      err = errno;
    }
    from = a + 1;
  }
  if (from <= last && from != 0 && real(from, last, flags) != 0 && rc == 0) {
    rc = -1;
    err = errno;
  }
  if (rc != 0) errno = err;
  return rc;
}

// True when a dup2/dup3 onto newfd must not happen: newfd is the agent's and the caller is the program
// (in this process: a vfork child has a table of its own). Then the call "succeeds" as the program
// expects, with the checks the kernel would make first: oldfd must be open.
bool guard_dup_onto_agent(int oldfd, int newfd, int* result) {
  if (__builtin_expect(fds::kind_of(newfd) != FdKind::agent, 1)) return false;
  if (txray::hooks::t_kind == txray::ThreadKind::agent || !txray::hooks::in_this_process()) return false;
  int saved = errno;
  if (fcntl(oldfd, F_GETFD) < 0) {
    *result = -1;  // errno: EBADF, as the real call
    return true;
  }
  errno = saved;
  *result = newfd;
  return true;
}

}  // namespace

extern "C" {

int dup2(int oldfd, int newfd) {
  auto real = TXRAY_REAL(dup2, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  int r;
  if (oldfd != newfd && guard_dup_onto_agent(oldfd, newfd, &r)) return r;
  fds::note_program_close(newfd, newfd);
  return real(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags) {
  auto real = TXRAY_REAL(dup3, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  int r;
  // oldfd == newfd and bad flags are EINVAL from the real call, which then changes nothing.
  if (oldfd != newfd && (flags & ~O_CLOEXEC) == 0 && guard_dup_onto_agent(oldfd, newfd, &r)) return r;
  fds::note_program_close(newfd, newfd);
  return real(oldfd, newfd, flags);
}

int close_range(unsigned int first, unsigned int last, int flags) {
  auto real = TXRAY_REAL(close_range, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  if (first > last) return real(first, last, flags);
  return close_range_keeping_agent(first, last, flags, real);
}

void closefrom(int lowfd) {
  auto real_closefrom = TXRAY_REAL(closefrom, nullptr);
  auto real_range = TXRAY_REAL(close_range, nullptr);
  if (lowfd < 0) lowfd = 0;
  if (real_range && close_range_keeping_agent(unsigned(lowfd), ~0u, 0, real_range) == 0) return;
  // No close_range in this kernel: glibc's own closefrom falls back to /proc/self/fd.
  if (real_closefrom) real_closefrom(lowfd);
}

}  // extern "C"
