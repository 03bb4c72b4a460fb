// Socket interposers: call the real function, keep errno, hand the facts to agent/protocols/dispatch/socket_events.h.
// Plain reads and writes cost one fd-table lookup, and are a tail call of the real function when the
// descriptor is not followed; else a thread-kind check more (never a clock read).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/config.h"
#include "hints/hint_protocol.h"
#include "protocols/dispatch/socket_events.h"
#include "hooks/hook.h"
#include "hooks/rebind.h"
#include "transport/transport.h"

namespace {

using txray::FdKind;
namespace fds = txray::fds;
namespace sock = txray::sock;

inline bool is_agent_thread() {
  txray::ThreadKind k = txray::hooks::t_kind;
  if (__builtin_expect(k == txray::ThreadKind::unknown, 0)) k = txray::hooks::classify_thread();
  return k == txray::ThreadKind::agent;
}

// Decimal digits of v at p; returns the end. No printf on the accept path: the first printf a forked
// child makes faults in several pages of libc's code (the cost of short-lived children).
char* put_uint(char* p, unsigned v) {
  char tmp[10];
  int n = 0;
  do tmp[n++] = char('0' + v % 10);
  while ((v /= 10) != 0);
  while (n) *p++ = tmp[--n];
  return p;
}

// "ip:port" into out (ip is at most INET6_ADDRSTRLEN - 1 characters; out has 16 more).
void append_port(char* out, size_t cap, const char* ip, int port) {
  size_t n = std::strlen(ip);
  if (n + 8 > cap) return;
  std::memcpy(out, ip, n);
  out[n] = ':';
  *put_uint(out + n + 1, unsigned(port)) = '\0';
}

// The address of a socket address as text (ip), and its port; false for families other than IPv4/IPv6.
bool format_addr(const sockaddr* sa, char* ip, size_t ip_len, int* port) {
  if (!sa) return false;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    const auto* b = reinterpret_cast<const unsigned char*>(&in->sin_addr);
    char* p = ip;
    if (ip_len < INET_ADDRSTRLEN) return false;
    for (int i = 0; i < 4; ++i) {
      if (i) *p++ = '.';
      p = put_uint(p, b[i]);
    }
    *p = '\0';
    *port = ntohs(in->sin_port);
    return true;
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, socklen_t(ip_len));
    *port = ntohs(in6->sin6_port);
    return true;
  }
  return false;
}

void note_accept(int fd, const sockaddr* addr, const socklen_t* len) {
  if (fd < 0 || txray::config().mode != txray::Mode::http || !txray::host_thread_enabled()) return;
  txray::hooks::rebind();  // before the request's work: libraries loaded with RTLD_DEEPBIND (rebind.h)
  int saved = errno;
  sockaddr_storage ss;
  const sockaddr* sa = addr;
  if (!sa || !len || *len < sizeof(sa_family_t)) {
    socklen_t l = sizeof ss;
    sa = getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &l) == 0 ? reinterpret_cast<sockaddr*>(&ss) : nullptr;
  }
  char ip[INET6_ADDRSTRLEN] = "";
  char client[INET6_ADDRSTRLEN + 16] = "";
  int port = 0;
  if (format_addr(sa, ip, sizeof ip, &port)) append_port(client, sizeof client, ip, port);
  else if (sa && sa->sa_family == AF_UNIX) std::snprintf(client, sizeof client, "unix");
  else {
    errno = saved;
    return;  // not a stream socket family we follow
  }
  sock::on_accept(fd, client);
  errno = saved;
}

// Whether a read or write on fd may record anything: the agent follows it (accepted, connected). Looked
// at before the real call: a descriptor's kind changes at accept, connect and close, never while the
// program reads or writes it. False: the hook is a tail call of the real function (a plain
// read/write on a descriptor the agent does not follow costs a few instructions, no stack frame, no
// thread-local lookup). The *_followed functions are the rest of each hook, out of line.
inline txray::FdSlot* followed(int fd) {
  txray::FdSlot* s = fds::peek(fd);
  if (!s) return nullptr;
  FdKind k = s->kind.load(std::memory_order_relaxed);
  return (k != FdKind::none && k != FdKind::agent) ? s : nullptr;
}

// The real writev / sendmsg for http_out::write_through (ctx: nullptr, or the program's send flags).
ssize_t real_gather_write(int fd, const iovec* iov, int cnt, void* ctx) {
  if (!ctx) {
    auto real = TXRAY_REAL(writev, nullptr);
    if (!real) { errno = ENOSYS; return -1; }
    return real(fd, iov, cnt);
  }
  auto real = TXRAY_REAL(sendmsg, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = size_t(cnt);
  return real(fd, &m, *static_cast<int*>(ctx));
}

// A write on an outbound socket that carries HTTP goes through http_out, which may insert a traceparent
// header and then reports the program's own byte count in *r. False: make the plain call.
inline bool http_write_at(txray::FdSlot* s, int fd, const iovec* iov, int cnt, int* flags, ssize_t* r) {
  if (__builtin_expect(s->kind.load(std::memory_order_relaxed) != FdKind::outbound || !txray::http_out::has_client(s), 1) ||
      !txray::host_thread_enabled())
    return false;
  if (!txray::http_out::write_through(s, fd, iov, cnt, real_gather_write, flags, r)) return false;
  if (*r > 0 && s->connecting.load(std::memory_order_relaxed)) {
    txray::SaveErrno keep;
    sock::connect_completed(s);
  }
  return true;
}
inline bool http_write(int fd, const iovec* iov, int cnt, int* flags, ssize_t* r) {
  txray::FdSlot* s = fds::peek(fd);
  return s && http_write_at(s, fd, iov, cnt, flags, r);
}

using ReadFn = ssize_t (*)(int, void*, size_t);
using RecvFn = ssize_t (*)(int, void*, size_t, int);
using ReadvFn = ssize_t (*)(int, const iovec*, int);
using WriteFn = ssize_t (*)(int, const void*, size_t);
using SendFn = ssize_t (*)(int, const void*, size_t, int);

// A followed socket whose reads and writes only count bytes: outbound, connected, not HTTP (or let go:
// FdSlot::http_live). Its hooks take no thread-kind check: a descriptor becomes followed only on a host
// thread with the agent enabled (which it stays), and the agent's threads never use the program's
// sockets. The hook_cost benchmark's followed socket is one of these.
inline bool plain_outbound(const txray::FdSlot* s) {
  return s->kind.load(std::memory_order_relaxed) == FdKind::outbound && !txray::http_out::has_client(s) &&
         !s->connecting.load(std::memory_order_relaxed);
}

__attribute__((noinline)) ssize_t read_slow(ReadFn real, txray::FdSlot* s, int fd, void* buf, size_t n) {
  ssize_t r = real(fd, buf, n);
  if (r > 0 && txray::host_thread_enabled()) sock::on_read_at(s, buf, size_t(r));
  else if (r == 0 && n > 0 && txray::host_thread_enabled()) sock::on_eof(fd);
  return r;
}
__attribute__((noinline)) ssize_t read_followed(ReadFn real, txray::FdSlot* s, int fd, void* buf, size_t n) {
  if (!plain_outbound(s)) return read_slow(real, s, fd, buf, n);
  ssize_t r = real(fd, buf, n);
  if (r > 0) {
    s->add_read(size_t(r));
    txray::attr::close_window();
  }
  return r;
}

__attribute__((noinline)) ssize_t recv_slow(RecvFn real, txray::FdSlot* s, int fd, void* buf, size_t n, int flags) {
  ssize_t r = real(fd, buf, n, flags);
  // MSG_PEEK leaves the bytes in the socket: they are counted when really read.
  if (r > 0 && !(flags & MSG_PEEK) && txray::host_thread_enabled()) sock::on_read_at(s, buf, size_t(r));
  else if (r == 0 && n > 0 && txray::host_thread_enabled()) sock::on_eof(fd);
  return r;
}
__attribute__((noinline)) ssize_t recv_followed(RecvFn real, txray::FdSlot* s, int fd, void* buf, size_t n, int flags) {
  if (!plain_outbound(s)) return recv_slow(real, s, fd, buf, n, flags);
  ssize_t r = real(fd, buf, n, flags);
  if (r > 0 && !(flags & MSG_PEEK)) {
    s->add_read(size_t(r));
    txray::attr::close_window();
  }
  return r;
}

__attribute__((noinline)) ssize_t readv_followed(ReadvFn real, txray::FdSlot* s, int fd, const iovec* iov, int cnt) {
  ssize_t r = real(fd, iov, cnt);
  if (r > 0 && txray::host_thread_enabled()) sock::on_readv_at(s, iov, cnt, size_t(r));
  return r;
}

__attribute__((noinline)) ssize_t write_slow(WriteFn real, txray::FdSlot* s, int fd, const void* buf, size_t n) {
  iovec v{const_cast<void*>(buf), n};
  if (ssize_t hr; http_write_at(s, fd, &v, 1, nullptr, &hr)) return hr;
  ssize_t r = real(fd, buf, n);
  if (r > 0 && txray::host_thread_enabled()) sock::on_write_at(s, buf, size_t(r));
  return r;
}
__attribute__((noinline)) ssize_t write_followed(WriteFn real, txray::FdSlot* s, int fd, const void* buf, size_t n) {
  if (!plain_outbound(s)) return write_slow(real, s, fd, buf, n);
  ssize_t r = real(fd, buf, n);
  if (r > 0) s->add_written(size_t(r));
  return r;
}

__attribute__((noinline)) ssize_t send_slow(SendFn real, txray::FdSlot* s, int fd, const void* buf, size_t n, int flags) {
  iovec v{const_cast<void*>(buf), n};
  if (ssize_t hr; http_write_at(s, fd, &v, 1, &flags, &hr)) return hr;
  ssize_t r = real(fd, buf, n, flags);
  if (r > 0 && txray::host_thread_enabled()) sock::on_write_at(s, buf, size_t(r));
  return r;
}
__attribute__((noinline)) ssize_t send_followed(SendFn real, txray::FdSlot* s, int fd, const void* buf, size_t n, int flags) {
  if (!plain_outbound(s)) return send_slow(real, s, fd, buf, n, flags);
  ssize_t r = real(fd, buf, n, flags);
  if (r > 0) s->add_written(size_t(r));
  return r;
}

__attribute__((noinline)) ssize_t writev_followed(ReadvFn real, txray::FdSlot* s, int fd, const iovec* iov, int cnt) {
  if (ssize_t hr; http_write_at(s, fd, iov, cnt, nullptr, &hr)) return hr;
  ssize_t r = real(fd, iov, cnt);
  if (r > 0 && txray::host_thread_enabled()) sock::on_writev_at(s, iov, cnt, size_t(r));
  return r;
}

// write() to the runtime hint descriptor (hints/hint_protocol.h), out of line: the plain write hook
// keeps no stack frame.
__attribute__((noinline)) ssize_t write_hint(WriteFn real, int fd, const void* buf, size_t n) {
  if (long hr; txray::hooks::hint_write(buf, n, &hr)) return hr;
  return real(fd, buf, n);
}

// The real read/write family, resolved on first use. The hooks below take the unresolved case out of
// line as a tail call (hot_real): with the resolver's call inlined, every read and write paid a stack
// frame for it.
template <typename F>
struct HotReal {
  std::atomic<void*> slot{nullptr};
  F get() const { return reinterpret_cast<F>(slot.load(std::memory_order_relaxed)); }
};
HotReal<ReadFn> g_read;
HotReal<RecvFn> g_recv;
HotReal<ReadvFn> g_readv;
HotReal<WriteFn> g_write;
HotReal<SendFn> g_send;
HotReal<ReadvFn> g_writev;

// Resolves `name` into h and calls the hook again (which then finds it), or fails like the call would.
#define TXRAY_HOT_UNRESOLVED(h, name, ...)                                                   \
  do {                                                                                        \
    if (!txray::hooks::real_fn<decltype(h.get())>(h.slot, #name, nullptr)) {                 \
      errno = ENOSYS;                                                                         \
      return -1;                                                                              \
    }                                                                                         \
    return ::name(__VA_ARGS__);                                                               \
  } while (0)

__attribute__((noinline, cold)) ssize_t read_unresolved(int fd, void* buf, size_t n) {
  TXRAY_HOT_UNRESOLVED(g_read, read, fd, buf, n);
}
__attribute__((noinline, cold)) ssize_t recv_unresolved(int fd, void* buf, size_t n, int flags) {
  TXRAY_HOT_UNRESOLVED(g_recv, recv, fd, buf, n, flags);
}
__attribute__((noinline, cold)) ssize_t readv_unresolved(int fd, const iovec* iov, int cnt) {
  TXRAY_HOT_UNRESOLVED(g_readv, readv, fd, iov, cnt);
}
__attribute__((noinline, cold)) ssize_t write_unresolved(int fd, const void* buf, size_t n) {
  TXRAY_HOT_UNRESOLVED(g_write, write, fd, buf, n);
}
__attribute__((noinline, cold)) ssize_t send_unresolved(int fd, const void* buf, size_t n, int flags) {
  TXRAY_HOT_UNRESOLVED(g_send, send, fd, buf, n, flags);
}
__attribute__((noinline, cold)) ssize_t writev_unresolved(int fd, const iovec* iov, int cnt) {
  TXRAY_HOT_UNRESOLVED(g_writev, writev, fd, iov, cnt);
}

}  // namespace

extern "C" {

int accept(int fd, sockaddr* addr, socklen_t* len) {
  auto real = TXRAY_REAL(accept, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::transport::before_wait();  // a pre-fork worker blocks here between requests
  int r = real(fd, addr, len);
  note_accept(r, addr, len);
  return r;
}

int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  auto real = TXRAY_REAL(accept4, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  txray::transport::before_wait();  // a pre-fork worker blocks here between requests
  int r = real(fd, addr, len, flags);
  note_accept(r, addr, len);
  return r;
}

// A stream socket connected to a Unix socket (a database's local socket, most often): followed quietly,
// for the wire protocols only (FdSlot::quiet). Abstract and unnamed addresses are left alone.
static __attribute__((noinline)) int connect_unix(int (*real)(int, const sockaddr*, socklen_t), int fd, const sockaddr* addr,
                                           socklen_t len) {
  int rc = real(fd, addr, len);
  int err = errno;
  auto* un = reinterpret_cast<const sockaddr_un*>(addr);
  size_t max = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
  if (max > sizeof un->sun_path) max = sizeof un->sun_path;
  if ((rc == 0 || err == EINPROGRESS || err == EAGAIN) && max > 0 && un->sun_path[0] != '\0') {
    txray::HookGuard guard(txray::HookFamily::socket);
    int type = 0;
    socklen_t tl = sizeof type;
    if (guard && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM)
      sock::on_connect_unix(fd, std::string_view(un->sun_path, strnlen(un->sun_path, max)));
  }
  errno = err;
  return rc;
}

int connect(int fd, const sockaddr* addr, socklen_t len) {
  auto real = TXRAY_REAL(connect, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  char ip[INET6_ADDRSTRLEN] = "";
  int port = 0;
  if (addr && len > sizeof(sa_family_t) && addr->sa_family == AF_UNIX && txray::host_thread_enabled())
    return connect_unix(real, fd, addr, len);
  if (!txray::host_thread_enabled() || !format_addr(addr, ip, sizeof ip, &port)) return real(fd, addr, len);
  txray::HookGuard guard(txray::HookFamily::socket);
  if (!guard) return real(fd, addr, len);
  txray::hooks::rebind();  // libraries loaded with RTLD_DEEPBIND since the last pass (rebind.h)
  int type = 0;
  socklen_t tl = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM) {
    errno = 0;
    return real(fd, addr, len);
  }
  txray::StepRef step = sock::on_connect_begin(fd, ip, port);
  int rc = real(fd, addr, len);
  int err = rc == 0 ? 0 : errno;
  int local_port = 0;
  if (rc == 0 || err == EINPROGRESS) {
    sockaddr_storage ss;
    socklen_t l = sizeof ss;
    char lip[INET6_ADDRSTRLEN];
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &l) == 0)
      format_addr(reinterpret_cast<sockaddr*>(&ss), lip, sizeof lip, &local_port);
  }
  sock::on_connect_end(fd, step, rc, err, local_port);
  errno = err;
  return rc;
}

ssize_t read(int fd, void* buf, size_t n) {
  auto real = g_read.get();
  if (__builtin_expect(!real, 0)) return read_unresolved(fd, buf, n);
  txray::FdSlot* s = followed(fd);
  if (__builtin_expect(s == nullptr, 1)) return real(fd, buf, n);
  return read_followed(real, s, fd, buf, n);
}

ssize_t recv(int fd, void* buf, size_t n, int flags) {
  auto real = g_recv.get();
  if (__builtin_expect(!real, 0)) return recv_unresolved(fd, buf, n, flags);
  txray::FdSlot* s = followed(fd);
  if (__builtin_expect(s == nullptr, 1)) return real(fd, buf, n, flags);
  return recv_followed(real, s, fd, buf, n, flags);
}

ssize_t recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* addr, socklen_t* len) {
  auto real = TXRAY_REAL(recvfrom, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  ssize_t r = real(fd, buf, n, flags, addr, len);
  if (r > 0 && !(flags & MSG_PEEK) && txray::host_thread_enabled()) sock::on_read(fd, buf, size_t(r));
  else if (r == 0 && n > 0 && txray::host_thread_enabled()) sock::on_eof(fd);
  return r;
}

ssize_t recvmsg(int fd, msghdr* msg, int flags) {
  auto real = TXRAY_REAL(recvmsg, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  ssize_t r = real(fd, msg, flags);
  if (r > 0 && !(flags & MSG_PEEK) && txray::host_thread_enabled())
    sock::on_readv(fd, msg->msg_iov, int(msg->msg_iovlen), size_t(r));
  return r;
}

ssize_t readv(int fd, const iovec* iov, int cnt) {
  auto real = g_readv.get();
  if (__builtin_expect(!real, 0)) return readv_unresolved(fd, iov, cnt);
  txray::FdSlot* s = followed(fd);
  if (__builtin_expect(s == nullptr, 1)) return real(fd, iov, cnt);
  return readv_followed(real, s, fd, iov, cnt);
}

ssize_t write(int fd, const void* buf, size_t n) {
  auto real = g_write.get();
  if (__builtin_expect(!real, 0)) return write_unresolved(fd, buf, n);
  if (__builtin_expect(fd == txray::hint::kHintFd, 0)) return write_hint(real, fd, buf, n);
  txray::FdSlot* s = followed(fd);
  if (__builtin_expect(s == nullptr, 1)) return real(fd, buf, n);
  return write_followed(real, s, fd, buf, n);
}

ssize_t send(int fd, const void* buf, size_t n, int flags) {
  auto real = g_send.get();
  if (__builtin_expect(!real, 0)) return send_unresolved(fd, buf, n, flags);
  txray::FdSlot* s = followed(fd);
  if (__builtin_expect(s == nullptr, 1)) return real(fd, buf, n, flags);
  return send_followed(real, s, fd, buf, n, flags);
}

ssize_t sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* addr, socklen_t len) {
  auto real = TXRAY_REAL(sendto, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  iovec v{const_cast<void*>(buf), n};
  if (ssize_t hr; !addr && http_write(fd, &v, 1, &flags, &hr)) return hr;
  ssize_t r = real(fd, buf, n, flags, addr, len);
  if (r > 0 && txray::host_thread_enabled()) sock::on_write(fd, buf, size_t(r));
  return r;
}

ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
  auto real = TXRAY_REAL(sendmsg, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  if (ssize_t hr; !msg->msg_name && !msg->msg_controllen &&
                  http_write(fd, msg->msg_iov, int(msg->msg_iovlen), &flags, &hr)) return hr;
  ssize_t r = real(fd, msg, flags);
  if (r > 0 && txray::host_thread_enabled()) sock::on_writev(fd, msg->msg_iov, int(msg->msg_iovlen), size_t(r));
  return r;
}

ssize_t writev(int fd, const iovec* iov, int cnt) {
  auto real = g_writev.get();
  if (__builtin_expect(!real, 0)) return writev_unresolved(fd, iov, cnt);
  txray::FdSlot* s = followed(fd);
  if (__builtin_expect(s == nullptr, 1)) return real(fd, iov, cnt);
  return writev_followed(real, s, fd, iov, cnt);
}

ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  auto real = TXRAY_REAL(sendfile, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  ssize_t r = real(out_fd, in_fd, offset, count);
  if (r > 0 && txray::host_thread_enabled()) sock::on_write_opaque(out_fd, uint64_t(r));
  return r;
}

ssize_t sendfile64(int out_fd, int in_fd, off64_t* offset, size_t count) {
  auto real = TXRAY_REAL(sendfile64, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  ssize_t r = real(out_fd, in_fd, offset, count);
  if (r > 0 && txray::host_thread_enabled()) sock::on_write_opaque(out_fd, uint64_t(r));
  return r;
}

// Only to learn the outcome of a non-blocking connect (SO_ERROR is cleared by reading it).
int getsockopt(int fd, int level, int name, void* val, socklen_t* len) {
  auto real = TXRAY_REAL(getsockopt, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  int r = real(fd, level, name, val, len);
  if (r == 0 && level == SOL_SOCKET && name == SO_ERROR && val && len && *len >= sizeof(int) &&
      sock::needs_so_error(fd) && txray::host_thread_enabled()) {
    txray::HookGuard guard(txray::HookFamily::socket);
    if (guard) {
      int v;
      std::memcpy(&v, val, sizeof v);
      sock::on_so_error(fd, v);
    }
  }
  return r;
}

int shutdown(int fd, int how) {
  auto real = TXRAY_REAL(shutdown, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  int r = real(fd, how);
  if (r == 0 && txray::host_thread_enabled() && txray::hooks::in_this_process()) {
    txray::HookGuard guard(txray::HookFamily::socket);
    if (guard) sock::on_shutdown(fd, how);
  }
  return r;
}

int close(int fd) {
  auto real = TXRAY_REAL(close, nullptr);
  if (!real) { errno = ENOSYS; return -1; }
  fds::note_program_close(fd, fd);
  FdKind k = fds::kind_of(fd);
  if (__builtin_expect(k == FdKind::none, 1)) {
    int r = real(fd);
    fds::note_program_close(fd, fd);  // again: the agent may have begun making a socket meanwhile
    return r;
  }
  if (k == FdKind::agent) {
    // The program cannot close the agent's descriptor (PITFALLS 4, 12); a vfork child can (it has a
    // descriptor table of its own).
    if (!is_agent_thread()) return txray::hooks::in_this_process() ? 0 : real(fd);
    if (auto* s = fds::peek(fd)) s->kind.store(FdKind::none, std::memory_order_relaxed);
    return real(fd);
  }
  if (txray::host_thread_enabled() && txray::hooks::in_this_process()) {
    txray::HookGuard guard(txray::HookFamily::socket);
    if (guard) {
      int so_error = 0;
      if (sock::needs_so_error(fd)) {
        int saved = errno;
        socklen_t l = sizeof so_error;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &l) != 0) so_error = 0;
        errno = saved;
      }
      sock::on_close(fd, so_error);
    }
  }
  return real(fd);
}

}  // extern "C"
