// close_range() and closefrom(): programs that close every descriptor (daemons, spawners) must not close
// the agent's own, so the range is split around them (PITFALLS 12).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "../core/socket_events.h"
#include "hook.h"

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

}  // namespace

extern "C" {

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
