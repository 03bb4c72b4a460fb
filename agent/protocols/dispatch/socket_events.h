// What the socket hooks tell the core. Each function takes facts (descriptor, bytes, addresses), never
// calls the system, and keeps errno. The inline ones are the hot path of every read/write.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/attribution.h"
#include "core/fd_table.h"
#include "protocols/dispatch/http_out.h"
#include "core/recorder.h"

namespace txray::sock {

// An accepted connection; `client` is "ip:port" (or "unix"). Ignored unless in http mode.
void on_accept(int fd, std::string_view client);

// An outbound connect of a stream socket is starting: marks fd outbound with a new uid and, when the
// thread has a transaction, opens its SOCKET step (returned; empty otherwise).
StepRef on_connect_begin(int fd, std::string_view addr, int port);
// The connect returned: rc/err as the real call left them, local port of the socket (0 if unknown).
void on_connect_end(int fd, StepRef& step, int rc, int err, int local_port);
// A stream socket was connected to the Unix socket at `path` (rc 0, or a non-blocking connect under
// way): followed quietly, for a wire protocol only (FdSlot::quiet).
void on_connect_unix(int fd, std::string_view path);

// Slow paths of the inline functions below.
void inbound_read(FdSlot* s, const char* p, size_t n);
void inbound_readv(FdSlot* s, const iovec* iov, int cnt, size_t n);
void inbound_write(FdSlot* s, const char* p, size_t n);
void inbound_writev(FdSlot* s, const iovec* iov, int cnt, size_t n);
void inbound_write_opaque(FdSlot* s, uint64_t n);
void connect_completed(FdSlot* s);

// `n` bytes were read from fd into p (n > 0); the _at forms take fd's slot (fds::peek), already found.
inline void on_read_at(FdSlot* s, const void* p, size_t n) {
  FdKind k = s->kind.load(std::memory_order_relaxed);
  if (k == FdKind::none || k == FdKind::agent) return;
  s->add_read(n);
  if (k == FdKind::inbound) inbound_read(s, static_cast<const char*>(p), n);
  else if (attr::close_window(), s->connecting.load(std::memory_order_relaxed)) connect_completed(s);
  if (k == FdKind::outbound && http_out::has_client(s)) http_out::on_received(s, static_cast<const char*>(p), n);
}
inline void on_read(int fd, const void* p, size_t n) {
  if (FdSlot* s = fds::peek(fd)) on_read_at(s, p, n);
}
inline void on_readv_at(FdSlot* s, const iovec* iov, int cnt, size_t n) {
  FdKind k = s->kind.load(std::memory_order_relaxed);
  if (k == FdKind::none || k == FdKind::agent) return;
  s->add_read(n);
  if (k == FdKind::inbound) inbound_readv(s, iov, cnt, n);
  else if (attr::close_window(), s->connecting.load(std::memory_order_relaxed)) connect_completed(s);
  if (k == FdKind::outbound && http_out::has_client(s)) http_out::on_receivedv(s, iov, cnt, n);
}
inline void on_readv(int fd, const iovec* iov, int cnt, size_t n) {
  if (FdSlot* s = fds::peek(fd)) on_readv_at(s, iov, cnt, n);
}
// `n` bytes of p were written to fd (n > 0).
inline void on_write_at(FdSlot* s, const void* p, size_t n) {
  FdKind k = s->kind.load(std::memory_order_relaxed);
  if (k == FdKind::none || k == FdKind::agent) return;
  s->add_written(n);
  if (k == FdKind::inbound) inbound_write(s, static_cast<const char*>(p), n);
  else if (s->connecting.load(std::memory_order_relaxed)) connect_completed(s);
  if (k == FdKind::outbound && http_out::has_client(s)) http_out::on_sent(s, static_cast<const char*>(p), n);
}
inline void on_write(int fd, const void* p, size_t n) {
  if (FdSlot* s = fds::peek(fd)) on_write_at(s, p, n);
}
inline void on_writev_at(FdSlot* s, const iovec* iov, int cnt, size_t n) {
  FdKind k = s->kind.load(std::memory_order_relaxed);
  if (k == FdKind::none || k == FdKind::agent) return;
  s->add_written(n);
  if (k == FdKind::inbound) inbound_writev(s, iov, cnt, n);
  else if (s->connecting.load(std::memory_order_relaxed)) connect_completed(s);
  if (k == FdKind::outbound && http_out::has_client(s)) http_out::on_sentv(s, iov, cnt, n);
}
inline void on_writev(int fd, const iovec* iov, int cnt, size_t n) {
  if (FdSlot* s = fds::peek(fd)) on_writev_at(s, iov, cnt, n);
}
// sendfile: n bytes whose contents the agent does not see.
inline void on_write_opaque(int fd, uint64_t n) {
  FdSlot* s = fds::peek(fd);
  if (!s) return;
  FdKind k = s->kind.load(std::memory_order_relaxed);
  if (k == FdKind::none || k == FdKind::agent) return;
  s->add_written(n);
  if (k == FdKind::inbound) inbound_write_opaque(s, n);
  if (k == FdKind::outbound && http_out::has_client(s)) http_out::on_sent_opaque(s, n);
}

// A read on fd returned 0 (end of stream): ends an outbound HTTP response that lasts until close.
inline void on_eof(int fd) {
  FdSlot* s = fds::peek(fd);
  if (s && s->kind.load(std::memory_order_relaxed) == FdKind::outbound && http_out::has_client(s)) http_out::on_eof(s);
}
// The slot of an outbound socket that has HTTP client state (for the write hooks, which may have to
// insert a traceparent header: http_out::write_through), else nullptr.
inline FdSlot* outbound_http(int fd) {
  FdSlot* s = fds::peek(fd);
  return (s && s->kind.load(std::memory_order_relaxed) == FdKind::outbound && http_out::has_client(s)) ? s : nullptr;
}

// shutdown(fd, how): SHUT_WR/SHUT_RDWR on an inbound connection ends an until-close response.
void on_shutdown(int fd, int how);
// The program is about to close fd (called before the real close): SOCKET_CLOSE for an outbound
// socket, end of the connection for an inbound one; the slot is forgotten. `so_error` is the socket's
// pending error (SO_ERROR) when it was still connecting (see needs_so_error()), else 0.
void on_close(int fd, int so_error = 0);
// The program read the socket's SO_ERROR (how non-blocking connects learn their outcome; reading it
// clears it, so the agent takes it here).
void on_so_error(int fd, int so_error);
// Whether the close hook should read SO_ERROR before closing fd (a non-blocking connect in progress).
inline bool needs_so_error(int fd) {
  FdSlot* s = fds::peek(fd);
  return s && s->connecting.load(std::memory_order_relaxed);
}

// request_on(fd, n, txid): declared in core/attribution.h, which needs it; defined in socket_events.cpp.

// In a forked child: transactions in progress on inherited connections belong to the parent.
void after_fork_child();

}  // namespace txray::sock
