// Event-wait calls: an event loop going back to wait ends the handler window of the request it read
// last (agent/core/attribution.h, rule 5): one thread-local store each. Going to wait is also when a
// forked child's held transactions get their agent thread (transport.h: wait_call).
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include <cerrno>

#include "core/attribution.h"
#include "hooks/hook.h"
#include "transport/transport.h"

extern "C" {

int epoll_wait(int epfd, epoll_event* ev, int max, int timeout) {
  auto real = TXRAY_REAL(epoll_wait, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, epfd, ev, max, timeout);
}

int epoll_pwait(int epfd, epoll_event* ev, int max, int timeout, const sigset_t* mask) {
  auto real = TXRAY_REAL(epoll_pwait, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, epfd, ev, max, timeout, mask);
}

int epoll_pwait2(int epfd, epoll_event* ev, int max, const timespec* timeout, const sigset_t* mask) {
  auto real = TXRAY_REAL(epoll_pwait2, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, epfd, ev, max, timeout, mask);
}

int poll(pollfd* fds, nfds_t n, int timeout) {
  auto real = TXRAY_REAL(poll, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, fds, n, timeout);
}

int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  using Fn = int (*)(pollfd*, nfds_t, int, size_t);
  static std::atomic<void*> slot{nullptr};
  auto real = txray::hooks::real_fn<Fn>(slot, "__poll_chk", nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, fds, n, timeout, fdslen);
}

int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
  auto real = TXRAY_REAL(ppoll, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, fds, n, timeout, mask);
}

int select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* timeout) {
  auto real = TXRAY_REAL(select, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, n, r, w, e, timeout);
}

int pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* timeout, const sigset_t* mask) {
  auto real = TXRAY_REAL(pselect, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::attr::close_window();
  return txray::transport::wait_call(real, n, r, w, e, timeout, mask);
}

}  // extern "C"
