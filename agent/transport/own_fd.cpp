#include "transport/own_fd.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "core/fd_table.h"

namespace txray::transport {
namespace {

constexpr int kTopCap = 1024;  // the kernel's table starts at 64 and grows by powers of two: stay within 1024

// The real close, not the agent's own close() hook (which would refuse: the number is marked).
void sys_close(int fd) { syscall(SYS_close, fd); }

std::atomic<bool> g_private{false};

// Closes [first, last] in the calling thread's table (close_range, or one by one on older kernels).
void sys_close_range(unsigned first, unsigned last, int top) {
  if (first > last) return;
  if (syscall(SYS_close_range, first, last, 0) == 0) return;
  for (int fd = int(first); fd <= top && unsigned(fd) <= last; ++fd) sys_close(fd);
}

int table_top() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > rlim_t(kTopCap))
    return kTopCap;
  return int(rl.rlim_cur);
}

// A copy of fd near the top of the table (close-on-exec), or -1. F_DUPFD takes the lowest free number
// >= its argument: ask from the top down, so that the copy lands on the highest free number (with
// RLIMIT_NOFILE 16: fd 15, leaving 3..14 to the program).
int dup_high(int fd) {
  int top = table_top();
  for (int base : {top - 1, top - 4, top - 16, top - 64, top / 2}) {
    if (base <= fd || base < 3) continue;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, base);
    if (moved >= top) {  // the numbers above base are taken (by the agent's other descriptors): lower
      sys_close(moved);
      continue;
    }
    if (moved >= 0 || errno == EBADF) return moved;
  }
  errno = EMFILE;
  return -1;
}

// After a close the program made around the agent's socket(): does `fd` still hold the socket the agent
// made (then `moved`, its copy, is the same file and still looks brand new: a non-blocking stream socket
// of `domain`, unbound and unconnected)? The close the hooks noted was then the program's own, made just
// before the socket() (a close is noted before and after the real call, so it cannot slip through).
bool still_ours(int fd, int moved, int domain) {
  struct stat a, b;
  if (fstat(fd, &a) != 0 || fstat(moved, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) return false;
  int v = 0;
  socklen_t l = sizeof v;
  if (getsockopt(moved, SOL_SOCKET, SO_DOMAIN, &v, &l) != 0 || v != domain) return false;
  l = sizeof v;
  if (getsockopt(moved, SOL_SOCKET, SO_TYPE, &v, &l) != 0 || v != SOCK_STREAM) return false;
  if (!(fcntl(moved, F_GETFL) & O_NONBLOCK)) return false;
  sockaddr_storage ss;
  l = sizeof ss;
  if (getpeername(moved, reinterpret_cast<sockaddr*>(&ss), &l) == 0 || errno != ENOTCONN) return false;
  l = sizeof ss;
  if (getsockname(moved, reinterpret_cast<sockaddr*>(&ss), &l) != 0) return false;
  if (domain == AF_UNIX) return l <= sizeof(sa_family_t);
  if (domain == AF_INET) return reinterpret_cast<sockaddr_in*>(&ss)->sin_port == 0;
  if (domain == AF_INET6) return reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port == 0;
  return false;
}

}  // namespace

bool take_private_fd_table(bool shared, bool keep_stderr) {
  if (shared || unshare(CLONE_FILES) != 0) {
    g_private.store(false, std::memory_order_release);  // (a forked child's thread decides anew)
    return false;
  }
  // The copy holds every descriptor the program had a moment ago: let them go at once.
  rlimit rl{};
  int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? int(rl.rlim_cur) : 65536;
  if (keep_stderr) {
    sys_close_range(0, 1, top);
    sys_close_range(3, ~0u, top);
  } else {
    sys_close_range(0, ~0u, top);
  }
  g_private.store(true, std::memory_order_release);
  return true;
}

bool private_fd_table() { return g_private.load(std::memory_order_acquire); }

void forget_private_fd_table() { g_private.store(false, std::memory_order_release); }

int open_own_socket(int domain) {
  constexpr int kType = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
  if (private_fd_table()) return socket(domain, kType, 0);
  for (int attempt = 0; attempt < 3; ++attempt) {
    fds::g_closed_lo.store(INT32_MAX, std::memory_order_seq_cst);
    fds::g_closed_hi.store(-1, std::memory_order_seq_cst);
    fds::g_agent_opening.store(1, std::memory_order_seq_cst);
    int fd = socket(domain, kType, 0);
    int moved = fd >= 0 ? dup_high(fd) : -1;
    bool closed_under_us = moved < 0 && errno == EBADF;
    fds::g_agent_opening.store(0, std::memory_order_seq_cst);
    if (fd < 0) return -1;
    if (closed_under_us) continue;  // the program closed it (a sweep): nothing of ours is left there
    bool noted = fd >= fds::g_closed_lo.load(std::memory_order_seq_cst) &&
                 fd <= fds::g_closed_hi.load(std::memory_order_seq_cst);
    if (noted && !(moved >= 0 && still_ours(fd, moved, domain))) {
      // The program closed this very number meanwhile (a sweep): the socket is gone, and the number
      // may hold the program's file now. Leave it; the copy at the top (if any) is one reference less.
      if (moved >= 0) sys_close(moved);
      continue;
    }
    if (moved < 0 && fd > 2) {
      fds::mark_agent(fd);
      return fd;
    }
    sys_close(fd);
    if (moved < 0) {
      errno = EMFILE;  // only 0-2 were free: the program's standard streams are never the agent's
      return -1;
    }
    fds::mark_agent(moved);
    return moved;
  }
  errno = EAGAIN;
  return -1;
}

int move_own_fd(int fd) {
  int moved = fd > 2 ? dup_high(fd) : -1;
  if (moved < 0) {
    fds::mark_agent(fd);
    return fd;
  }
  sys_close(fd);
  fds::mark_agent(moved);
  return moved;
}

void release_fd(int fd) {
  if (fd < 0) return;
  disown_fd(fd);
  sys_close(fd);
}

void disown_fd(int fd) {
  if (private_fd_table()) return;  // marks are for numbers in the program's table
  if (FdSlot* s = fds::peek(fd)) {
    FdKind agent = FdKind::agent;
    s->kind.compare_exchange_strong(agent, FdKind::none, std::memory_order_acq_rel);
  }
}

bool file_id(int fd, FileId* out) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  out->dev = st.st_dev;
  out->ino = st.st_ino;
  return true;
}

bool still_same(int fd, const FileId& id) {
  FileId now;
  return file_id(fd, &now) && now.dev == id.dev && now.ino == id.ino;
}

}  // namespace txray::transport
