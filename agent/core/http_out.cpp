#include "http_out.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "../hooks/hook.h"
#include "counters.h"
#include "http_client.h"
#include "hint_board.h"
#include "http_inject.h"
#include "recorder.h"
#include "transaction.h"
#include "unattributed.h"

namespace txray {

struct HttpClientConn {
  // Held while one thread works on this state: a client may write a request on one thread and read its
  // response on another (the JDK's HttpClient writes from worker threads and reads on its selector
  // thread, which may still be in the read hook when the next request goes out).
  std::atomic_flag busy;
  std::atomic<uint32_t> holder{0};  // tid of the thread holding `busy`
  HttpClientTracker tracker;
  HeaderInjector inj;
  CallSink sink;
};

namespace http_out {
namespace {

thread_local uint64_t t_call_span __attribute__((tls_model("initial-exec"))) = 0;

// Requests written inside libcurl's multi interface with an inserted header: (span id, URL), oldest
// overwritten first.
struct CurlRequest {
  uint64_t span = 0;
  std::string url;
};
constexpr size_t kCurlRequests = 64;
struct CurlRequests {
  CurlRequest r[kCurlRequests];
  size_t next = 0;
};
// Allocated by the first multi-interface request of a thread (most threads never need it).
thread_local std::unique_ptr<CurlRequests> t_curl;

void remember_curl_request(uint64_t span, std::string url) {
  if (!t_curl) t_curl.reset(new (std::nothrow) CurlRequests);
  if (!t_curl) return;
  CurlRequest& r = t_curl->r[t_curl->next++ % kCurlRequests];
  r.span = span;
  r.url = std::move(url);
}

bool env_flag(const char* name, bool dflt) {
  const char* v = getenv(name);
  if (!v || !*v) return dflt;
  return !(strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "off") == 0 || strcmp(v, "no") == 0);
}

// True while a libcurl hook runs on this thread: it records the transfer itself.
bool inside_curl() {
  return hooks::t_in_family & (1u << static_cast<unsigned>(HookFamily::http_call));
}

// A step ref is only used while it belongs to the thread's current transaction: an ended
// transaction's memory may be gone (the recorder itself then checks the txid).
bool live(const StepRef& s) { return rec::usable(s); }

// A connection found not to be HTTP, with nothing of an inserted header pending, is let go: the hooks
// stop calling in here for it (has_client()) until the slot's next connect. Called holding its Busy.
void let_go_if_not_http(FdSlot* s, HttpClientConn* c) {
  if (c->tracker.opaque() && !c->inj.has_pending()) s->http_live.store(false, std::memory_order_relaxed);
}

// The slot's connection when it may still carry HTTP requests, else nullptr.
HttpClientConn* http_conn(FdSlot* s) {
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  return (c && !c->tracker.opaque()) ? c : nullptr;
}

// The connection's state for the calling thread while it lives. Another thread holds it for a few
// microseconds at most, unless it was descheduled in between: then this waits, yielding, for up to a few
// thousand turns — a missed response would leave the tracker one response behind for the connection's
// life. The holder being this very thread (a signal handler interrupted it) skips at once. A skip is
// counted.
class Busy {
 public:
  explicit Busy(HttpClientConn* c) {
    if (!c) return;
    uint32_t me = tx::this_tid();
    for (int i = 0; i < 4096; ++i) {
      if (!c->busy.test_and_set(std::memory_order_acquire)) {
        c->holder.store(me, std::memory_order_relaxed);
        c_ = c;
        return;
      }
      if (c->holder.load(std::memory_order_relaxed) == me) break;
      if (i >= 8) sched_yield();
    }
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
  }
  ~Busy() {
    if (c_) {
      c_->holder.store(0, std::memory_order_relaxed);
      c_->busy.clear(std::memory_order_release);
    }
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;
  explicit operator bool() const { return c_ != nullptr; }

 private:
  HttpClientConn* c_ = nullptr;
};

// A row opened for a request whose head never went out completely ends here, failed.
void drop_preopened(HttpClientConn* c) {
  if (live(c->sink.preopened)) {
    rec::set_error(c->sink.preopened, "connection closed before the request was sent");
    rec::close(c->sink.preopened);
  }
  c->sink.preopened = StepRef{};
}

const char* first_bytes(const iovec* iov, int cnt, size_t* n) {
  for (int i = 0; i < cnt; ++i)
    if (iov[i].iov_len) {
      *n = iov[i].iov_len;
      return static_cast<const char*>(iov[i].iov_base);
    }
  *n = 0;
  return nullptr;
}

void feed_sent(HttpClientConn* c, const iovec* iov, int cnt, size_t n, uint64_t inserted_span) {
  for (int i = 0; i < cnt && n > 0; ++i) {
    size_t take = iov[i].iov_len < n ? iov[i].iov_len : n;
    c->tracker.on_sent(static_cast<const char*>(iov[i].iov_base), take, c->sink, inserted_span);
    inserted_span = 0;
    n -= take;
  }
}

}  // namespace

bool propagate() {
  static const bool v = env_flag("TXRAY_PROPAGATE", true);
  return v;
}

bool mask_query() {
  static const bool v = env_flag("TXRAY_MASK_QUERY", true);
  return v;
}

void set_call_span(uint64_t span_id) { t_call_span = span_id; }

uint64_t claim_curl_span(std::string_view url) {
  // the oldest unclaimed request of that URL: transfers of one URL end in the order they started
  // often enough, and any of them is a call to the same place
  if (!t_curl) return 0;
  for (size_t i = 0; i < kCurlRequests; ++i) {
    CurlRequest& r = t_curl->r[(t_curl->next + i) % kCurlRequests];
    if (r.span && r.url == url) {
      uint64_t span = r.span;
      r.span = 0;
      return span;
    }
  }
  return 0;
}

void set_owner(FdSlot* s, const ReqRef& r) {
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  if (Busy b(c); b) c->sink.owner = r;
}

// The transaction a request starting now on a connection belongs to: its owner when one was named (and
// nobody's if that request is over: never the writing thread's guess), else the thread's. `consume`:
// an owner names one request only.
Transaction* call_tx(ReqRef& owner_ref, bool consume) {
  ReqRef owner = owner_ref;
  if (consume) owner_ref = ReqRef{};
  if (!owner.valid()) return rec::current();
  if (Transaction* t = attr::resolve(owner)) return t;
  // The owner is over (or another thread's). An event loop cannot tell who writes now; a
  // thread-per-request thread can: its own request (a pooled connection opened by an earlier one).
  return attr::event_loop() ? unattr::container() : rec::current();
}

void on_connect(FdSlot* s, std::string_view addr, int port) {
  int saved = errno;
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  if (!c) {
    c = new (std::nothrow) HttpClientConn;
    if (!c) {
      counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
      errno = saved;
      return;
    }
    s->client.store(c, std::memory_order_release);
  }
  Busy b(c);
  if (!b) {
    errno = saved;
    return;
  }
  c->tracker = HttpClientTracker{};
  c->inj.clear();
  drop_preopened(c);
  c->sink.owner = ReqRef{};
  s->http_live.store(true, std::memory_order_relaxed);
  // IPv6 literals need brackets in a URL.
  bool v6 = addr.find(':') != std::string_view::npos;
  snprintf(c->sink.peer, sizeof c->sink.peer, v6 ? "[%.*s]:%d" : "%.*s:%d", int(addr.size()), addr.data(), port);
  errno = saved;
}

bool write_through(FdSlot* s, int fd, const iovec* iov, int cnt, WriteFn write_fn, void* ctx, ssize_t* result) {
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  if (!c) return false;
  Busy b(c);  // held across the real write: the request's bytes and the tracker move together
  if (!b) return false;
  // A runtime shim named the request this socket's next request belongs to (hint_board.h): the first
  // write after that is that request's head.
  if (ReqRef owner; hint::board::take(fd, &owner)) c->sink.owner = owner;
  if (c->tracker.opaque() && !c->inj.has_pending()) {
    let_go_if_not_http(s, c);
    return false;
  }
  size_t n0;
  const char* p0 = first_bytes(iov, cnt, &n0);
  int saved = errno;

  // Where to insert, if anywhere. Only the first non-empty iovec is searched for the request line.
  constexpr int kMaxIov = 64;
  size_t at = HeaderInjector::kNoInsert;
  char line[HeaderInjector::kMaxLine];
  size_t line_len = 0;
  uint64_t span = 0;
  if (cnt <= kMaxIov && p0 && propagate() && !c->tracker.opaque()) {
    size_t pos = c->tracker.insert_point(p0, n0);
    char joined[2048];
    if (pos == HeaderInjector::kNoInsert && cnt > 1 && !memchr(p0, '\n', n0)) {
      // The request line may go on in the next iovecs: look at the start of the write in one piece.
      size_t len = 0;
      for (int i = 0; i < cnt && len < sizeof joined; ++i) {
        size_t k = std::min(iov[i].iov_len, sizeof joined - len);
        memcpy(joined + len, iov[i].iov_base, k);
        len += k;
      }
      pos = c->tracker.insert_point(joined, len);
    }
    Transaction* tx = pos != HeaderInjector::kNoInsert ? call_tx(c->sink.owner, false) : nullptr;
    uint8_t trace[16];
    uint64_t own_span;
    if (tx && rec::trace_context(tx, trace, &own_span)) {
      span = (inside_curl() && t_call_span) ? t_call_span : rec::new_id();
      line_len = format_traceparent_line(trace, span, line, sizeof line);
      at = pos;  // an offset in the program's bytes (empty iovecs count 0)
      // This write starts a request: its row starts now (kept if the write has to be retried).
      if (!inside_curl() && !c->tracker.request_in_progress() && !live(c->sink.preopened))
        c->sink.preopened = rec::open(tx, StepKind::HTTP_CALL);
    }
  }
  if (at == HeaderInjector::kNoInsert && !c->inj.has_pending()) {
    errno = saved;
    return false;
  }
  // Pending bytes with a very long iovec list: send the first kMaxIov entries (a short write, which
  // writev allows) rather than the program's bytes before the pending ones.
  if (cnt > kMaxIov) cnt = kMaxIov;

  size_t total = 0;
  for (int i = 0; i < cnt; ++i) total += iov[i].iov_len;
  iovec out[kMaxIov + HeaderInjector::kExtraIov];
  size_t mine = 0;
  uint64_t inserted_span = 0;
  for (;;) {
    int k = c->inj.gather(iov, cnt, at, std::string_view(line, at == HeaderInjector::kNoInsert ? 0 : line_len), out);
    ssize_t r = write_fn(fd, out, k, ctx);
    if (r < 0) {
      *result = -1;  // none of the program's bytes went out; errno is the real call's
      return true;
    }
    mine = c->inj.commit(static_cast<size_t>(r));
    if (c->inj.inserted()) {
      inserted_span = span;
      at = HeaderInjector::kNoInsert;
    }
    // Only pending bytes went out: write again (a blocking socket blocks, a non-blocking one says EAGAIN).
    if (mine > 0 || total == 0 || r == 0) break;
  }
  saved = errno;
  s->add_written(mine);
  feed_sent(c, iov, cnt, mine, inserted_span);
  errno = saved;
  *result = static_cast<ssize_t>(mine);
  return true;
}

void on_sent(FdSlot* s, const char* p, size_t n) {
  iovec v{const_cast<char*>(p), n};
  on_sentv(s, &v, 1, n);
}

void on_sentv(FdSlot* s, const iovec* iov, int cnt, size_t n) {
  HttpClientConn* c = http_conn(s);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  feed_sent(c, iov, cnt, n, 0);
  let_go_if_not_http(s, c);
  errno = saved;
}

void on_sent_opaque(FdSlot* s, uint64_t n) {
  HttpClientConn* c = http_conn(s);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  c->tracker.on_sent_opaque(n, c->sink);
  let_go_if_not_http(s, c);
  errno = saved;
}

void on_received(FdSlot* s, const char* p, size_t n) {
  HttpClientConn* c = http_conn(s);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  c->tracker.on_received(p, n, c->sink);
  let_go_if_not_http(s, c);
  errno = saved;
}

void on_receivedv(FdSlot* s, const iovec* iov, int cnt, size_t n) {
  for (int i = 0; i < cnt && n > 0; ++i) {
    size_t take = iov[i].iov_len < n ? iov[i].iov_len : n;
    on_received(s, static_cast<const char*>(iov[i].iov_base), take);
    n -= take;
  }
}

void on_eof(FdSlot* s) {
  HttpClientConn* c = http_conn(s);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  c->tracker.on_end(c->sink);
  errno = saved;
}

void on_close(FdSlot* s, int fd) {
  hint::board::clear(fd);
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  if (!c->tracker.opaque()) c->tracker.on_end(c->sink);
  drop_preopened(c);
  c->tracker = HttpClientTracker{};
  c->inj.clear();
  errno = saved;
}

}  // namespace http_out

// ---------------------------------------------------------------------------------------------------

void CallSink::on_request(HttpCall& c, const HttpRequestHead& h) {
  if (http_out::inside_curl()) {  // the curl hook records this transfer
    if (c.span_id && !http_out::t_call_span)
      http_out::remember_curl_request(c.span_id, http_call_url(scheme, h.host, h.target, peer, http_out::mask_query()));
    return;
  }
  if (http_out::live(preopened)) {
    c.step = preopened;
    owner = ReqRef{};
  } else {
    Transaction* tx = http_out::call_tx(owner, true);
    if (!tx) return;
    c.step = rec::open(tx, StepKind::HTTP_CALL);
  }
  preopened = StepRef{};
  if (!c.step) return;
  if (!c.span_id) c.span_id = rec::new_id();  // not propagated: still an id for the row
  rec::set_id(c.step, c.span_id);
  std::string url = http_call_url(scheme, h.host, h.target, peer, http_out::mask_query());
  rec::set_text(c.step, url);
  rec::add_attr(c.step, "method", h.method);
}

void CallSink::on_first_byte(HttpCall& c) {
  if (!http_out::live(c.step)) return;
  char v[24];
  snprintf(v, sizeof v, "%llu", static_cast<unsigned long long>((rec::now_ns() - c.step.start_mono_ns) / 1000));
  rec::add_attr(c.step, "ttfb_us", v);
}

void CallSink::on_response(HttpCall& c, std::string_view error) {
  if (!http_out::live(c.step)) return;
  rec::set_status(c.step, c.status);
  rec::add_bytes(c.step, c.response_bytes, c.request_bytes);
  if (!error.empty()) rec::set_error(c.step, error);
  uint64_t elapsed = rec::close(c.step);  // also what a summary line got when the call was folded
  rec::add_totals(c.step.tx, {.call_ns = elapsed, .call_count = 1});
}

}  // namespace txray
