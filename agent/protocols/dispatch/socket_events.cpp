#include "protocols/dispatch/socket_events.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "core/config.h"
#include "core/counters.h"
#include "core/hold.h"
#include "protocols/http1/http_conn.h"
#include "core/ids.h"
#include "core/transaction.h"
#include "core/unattributed.h"

namespace txray::sock {
namespace {

HttpConn* conn_of(FdSlot* s) { return s->conn.load(std::memory_order_acquire); }

// One thread at a time works on a connection's HTTP state: a server may read and write one connection
// from two threads, and a slot is reused by the next connection on the same fd number (hold.h: waits
// for a descheduled holder, never for the calling thread itself).
class ConnGuard {
 public:
  explicit ConnGuard(FdSlot* s) : c_(conn_of(s)), hold_(c_ ? &c_->lock : nullptr) {}
  HttpConn* operator->() const { return c_; }
  explicit operator bool() const { return bool(hold_); }

 private:
  HttpConn* c_;
  Hold hold_;
};

}  // namespace

void on_accept(int fd, std::string_view client) {
  if (config().mode != Mode::http) return;
  int saved = errno;
  FdSlot* s = fds::get(fd);
  if (s) {
    if (!conn_of(s)) {
      HttpConn* fresh = new (std::nothrow) HttpConn;
      HttpConn* expected = nullptr;
      if (fresh && !s->conn.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) delete fresh;
    }
    ConnGuard c(s);
    if (c) {
      c->reset(client, fd);
      s->bytes_read.store(0, std::memory_order_relaxed);
      s->bytes_written.store(0, std::memory_order_relaxed);
      s->kind.store(FdKind::inbound, std::memory_order_release);
    } else {
      s->kind.store(FdKind::none, std::memory_order_release);  // not followed (counted)
    }
  }
  errno = saved;
}

StepRef on_connect_begin(int fd, std::string_view addr, int port) {
  int saved = errno;
  StepRef ref;
  if (FdSlot* s = fds::get(fd)) {
    if (s->kind.load(std::memory_order_relaxed) == FdKind::inbound)
      if (ConnGuard c(s); c) c->on_close();
    s->uid = ids::next();
    s->connecting.store(false, std::memory_order_relaxed);
    s->connect_step = StepRef{};
    s->owner_fd = -1;
    s->owner_txid = 0;
    s->quiet = false;
    s->bytes_read.store(0, std::memory_order_relaxed);
    s->bytes_written.store(0, std::memory_order_relaxed);
    s->kind.store(FdKind::outbound, std::memory_order_release);
    http_out::on_connect(s, addr, port);
    if (Transaction* t = rec::current()) {
      // The request handled now owns the connection's first request and its close (attribution.h):
      // nginx connects in one request's handler and writes when the connect completes, maybe after it
      // read others — and maybe before its worker has turned out to be an event loop.
      ReqRef owner = attr::ref_of(t);
      s->owner_fd = owner.fd;
      s->owner_txid = owner.txid;
      http_out::set_owner(s, owner);
      ref = rec::open(t, StepKind::SOCKET);
      if (ref) {
        char port_s[16];
        std::snprintf(port_s, sizeof port_s, "%d", port);
        char text[96];
        std::snprintf(text, sizeof text, "%.*s:%d", int(addr.size()), addr.data(), port);
        rec::set_text(ref, text);
        rec::add_attr(ref, "addr", addr);
        rec::add_attr(ref, "port", port_s);
        rec::set_id(ref, s->uid);
      }
    }
  }
  errno = saved;
  return ref;
}

void on_connect_end(int fd, StepRef& step, int rc, int err, int local_port) {
  int saved = errno;
  bool failed = rc != 0 && err != EINPROGRESS && err != EINTR && err != EALREADY && err != EISCONN;
  if (step) {
    char lp[16];
    std::snprintf(lp, sizeof lp, "%d", local_port);
    rec::add_attr(step, "localport", lp);
    if (failed) {
      const char* name = strerrorname_np(err);
      rec::set_error(step, name ? name : "connect failed");
    }
    rec::close(step);
  }
  if (FdSlot* s = fds::peek(fd)) {
    if (failed) s->kind.store(FdKind::none, std::memory_order_relaxed);
    if (rc != 0 && err == EINPROGRESS) {
      s->connect_step = step;
      s->connecting.store(true, std::memory_order_relaxed);
    }
  }
  errno = saved;
}

void on_connect_unix(int fd, std::string_view path) {
  int saved = errno;
  if (FdSlot* s = fds::get(fd)) {
    if (s->kind.load(std::memory_order_relaxed) == FdKind::inbound)
      if (ConnGuard c(s); c) c->on_close();
    s->uid = ids::next();
    s->connecting.store(false, std::memory_order_relaxed);
    s->connect_step = StepRef{};
    s->owner_fd = -1;
    s->owner_txid = 0;
    s->quiet = true;
    s->bytes_read.store(0, std::memory_order_relaxed);
    s->bytes_written.store(0, std::memory_order_relaxed);
    s->kind.store(FdKind::outbound, std::memory_order_release);
    http_out::on_connect(s, path, -1);
    if (Transaction* t = rec::current()) http_out::set_owner(s, attr::ref_of(t));
  }
  errno = saved;
}

void on_so_error(int fd, int so_error) {
  FdSlot* s = fds::peek(fd);
  if (!s || !s->connecting.load(std::memory_order_relaxed)) return;
  if (so_error == 0) return connect_completed(s);
  int saved = errno;
  s->connecting.store(false, std::memory_order_relaxed);
  const StepRef& ref = s->connect_step;
  if (ref) {
    rec::set_elapsed(ref, rec::now_ns() - ref.start_mono_ns);
    const char* name = strerrorname_np(so_error);
    rec::set_error(ref, name ? name : "connect failed");
  }
  errno = saved;
}

void connect_completed(FdSlot* s) {
  int saved = errno;
  s->connecting.store(false, std::memory_order_relaxed);
  const StepRef& ref = s->connect_step;
  if (ref) rec::set_elapsed(ref, rec::now_ns() - ref.start_mono_ns);
  errno = saved;
}

// A connection that turned out not to be HTTP (and has no response to follow) is let go: its reads and
// writes take the cheapest path from now on.
void let_go_if_not_http(FdSlot* s, const ConnGuard& c) {
  if (!c->watching && !c->in_request()) s->kind.store(FdKind::none, std::memory_order_relaxed);
}

void inbound_read(FdSlot* s, const char* p, size_t n) {
  int saved = errno;
  if (ConnGuard c(s); c) {
    c->on_read(p, n);
    attr::t_window_fd = c->in_request() ? c->fd : -1;  // this request's handler may run now
    let_go_if_not_http(s, c);
  }
  errno = saved;
}

void inbound_readv(FdSlot* s, const iovec* iov, int cnt, size_t n) {
  int saved = errno;
  if (ConnGuard c(s); c) {
    for (int i = 0; i < cnt && n > 0; ++i) {
      size_t take = iov[i].iov_len < n ? iov[i].iov_len : n;
      c->on_read(static_cast<const char*>(iov[i].iov_base), take);
      n -= take;
    }
    attr::t_window_fd = c->in_request() ? c->fd : -1;
    let_go_if_not_http(s, c);
  }
  errno = saved;
}

void inbound_write(FdSlot* s, const char* p, size_t n) {
  int saved = errno;
  if (ConnGuard c(s); c) c->on_write(p, n);
  errno = saved;
}

void inbound_writev(FdSlot* s, const iovec* iov, int cnt, size_t n) {
  int saved = errno;
  if (ConnGuard c(s); c) {
    for (int i = 0; i < cnt && n > 0; ++i) {
      size_t take = iov[i].iov_len < n ? iov[i].iov_len : n;
      c->on_write(static_cast<const char*>(iov[i].iov_base), take);
      n -= take;
    }
  }
  errno = saved;
}

void inbound_write_opaque(FdSlot* s, uint64_t n) {
  int saved = errno;
  if (ConnGuard c(s); c) c->on_write_opaque(n);
  errno = saved;
}

void on_shutdown(int fd, int how) {
  if (how != SHUT_WR && how != SHUT_RDWR) return;
  FdSlot* s = fds::peek(fd);
  if (!s || s->kind.load(std::memory_order_relaxed) != FdKind::inbound) return;
  int saved = errno;
  if (ConnGuard c(s); c) c->on_close();
  errno = saved;
}

// Where an outbound socket's SOCKET_CLOSE goes: the request that connected it while that is in flight;
// else, on a thread-per-request thread, its request (today's rule); else the unattributed container.
Transaction* close_owner(FdSlot* s) {
  if (s->owner_fd >= 0) {
    if (Transaction* t = attr::resolve(ReqRef{s->owner_fd, s->owner_txid})) return t;
  }
  return rec::current();
}

Transaction* request_on(int fd, uint32_t n, uint64_t txid) {
  FdSlot* s = fds::peek(fd);
  if (!s || s->kind.load(std::memory_order_acquire) != FdKind::inbound) return nullptr;
  HttpConn* c = conn_of(s);
  if (!c || !c->lock.try_take(tx::this_tid())) return nullptr;
  Transaction* t = c->request(txid);  // alive while the guard is held: ending it takes the guard
  if (t && n && c->seq != n) t = nullptr;
  if (t && !(t->mt || t->tid == tx::this_tid())) t = nullptr;  // another thread's: not touched from here
  c->lock.release();
  return t;
}

void on_close(int fd, int so_error) {
  FdSlot* s = fds::peek(fd);
  if (!s) return;
  FdKind k = s->kind.load(std::memory_order_relaxed);
  if (k == FdKind::none || k == FdKind::agent) return;
  int saved = errno;
  s->kind.store(FdKind::none, std::memory_order_relaxed);
  if (s->connecting.exchange(false, std::memory_order_relaxed)) {
    // Closed before a byte went either way: the connect's outcome is the socket's pending error.
    const StepRef& ref = s->connect_step;
    if (ref) {
      rec::set_elapsed(ref, rec::now_ns() - ref.start_mono_ns);
      if (so_error) {
        const char* name = strerrorname_np(so_error);
        rec::set_error(ref, name ? name : "connect failed");
      }
    }
  }
  if (k == FdKind::outbound) http_out::on_close(s, fd);  // ends a call still waiting for its response
  if (k == FdKind::inbound) {
    if (ConnGuard c(s); c) c->on_close();
  } else if (s->quiet) {
    // a Unix socket: no SOCKET rows (FdSlot::quiet)
  } else if (Transaction* t = close_owner(s)) {
    StepRef ref = rec::add(t, StepKind::SOCKET_CLOSE);
    uint64_t r = s->bytes_read.load(std::memory_order_relaxed);
    uint64_t w = s->bytes_written.load(std::memory_order_relaxed);
    char text[64];
    std::snprintf(text, sizeof text, "R=%llu,W=%llu", (unsigned long long)r, (unsigned long long)w);
    rec::set_text(ref, text);
    rec::add_bytes(ref, r, w);
    rec::set_id(ref, s->uid);
  }
  errno = saved;
}

void after_fork_child() {
  fds::for_each_used(0, (fds::kChunks << fds::kChunkBits) - 1, [](int, FdSlot& s) {
    if (s.kind.load(std::memory_order_relaxed) != FdKind::inbound) return;
    if (HttpConn* c = conn_of(&s)) {
      c->forget_after_fork();  // the parent's: not ended (nor freed) here
      c->lock.reset_after_fork();
    }
  });
}

}  // namespace txray::sock
