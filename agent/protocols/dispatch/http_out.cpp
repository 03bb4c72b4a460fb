#include "protocols/dispatch/http_out.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "hooks/hook.h"
#include "core/counters.h"
#include "protocols/http2/h2_client.h"
#include "protocols/http2/h2_conn.h"
#include "protocols/http2/h2_inject.h"
#include "protocols/http1/http_client.h"
#include "protocols/dispatch/wire_client.h"
#include "protocols/fastcgi/fastcgi_client.h"
#include "protocols/mysql/mysql_client.h"
#include "protocols/pg/pg_client.h"
#include "protocols/redis/redis_client.h"
#include "protocols/memcached/memcached_client.h"
#include "protocols/uwsgi/uwsgi_client.h"
#include "hints/hint_board.h"
#include "core/hold.h"
#include "protocols/http1/http_inject.h"
#include "protocols/tracecontext/context.h"
#include "core/recorder.h"
#include "core/span_owner.h"
#include "core/transaction.h"
#include "core/unattributed.h"

namespace txray {

struct H2State {
  H2Client client;
  H2Injector inj;
  H2Sink sink;
  std::string scratch;
  iovec out[1024];
};

struct HttpClientConn {
  // Held while one thread works on this state: a client may write a request on one thread and read its
  // response on another (the JDK's HttpClient writes from worker threads and reads on its selector
  // thread, which may still be in the read hook when the next request goes out).
  HoldFlag lock;
  HttpClientTracker tracker;
  HeaderInjector inj;
  CallSink sink;
  // HTTP/2 (the first bytes written were the client preface): h2 follows the connection instead of
  // the HTTP/1.x tracker. Allocated the first time, kept for the next connection on this slot.
  H2State* h2 = nullptr;
  bool h2_active = false;
  bool fresh = true;  // nothing written since the connect
  bool heard = false;  // something was read since the connect
  // A database (or other request/response) protocol recognised by its first bytes (wire_client.h): it
  // follows the connection instead of the HTTP trackers. Made for each such connection.
  WireClient* wire = nullptr;
  bool wire_active = false;
  // The wire client's connection switched to TLS: the socket's bytes are records it is not fed; the
  // plaintext comes from the OpenSSL hooks (tls_plaintext), when the program uses libssl on it.
  bool wire_tls = false;
  bool tls_fed = false;  // some plaintext came that way (else, at the end, the stream was not seen)
  // The connection is driven by a hooked client library (libpq, libmariadb): its statements are the
  // library hooks' rows, so no wire parser follows it (one source per statement).
  bool library = false;
  ~HttpClientConn() {
    delete h2;
    delete wire;
  }
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
  if (!c->h2_active && !c->wire_active && c->tracker.opaque() && !c->inj.has_pending()) {
    s->http_live.store(false, std::memory_order_relaxed);
    // A Unix socket is followed for a wire protocol only: nothing more to see on it.
    if (s->quiet) s->kind.store(FdKind::none, std::memory_order_relaxed);
  }
}

// The slot's connection when it may still carry HTTP requests, else nullptr.
HttpClientConn* http_conn(FdSlot* s) {
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  return (c && (!c->tracker.opaque() || c->h2_active || c->wire_active)) ? c : nullptr;
}

// True while a hooked SQL client library (libpq, libmariadb) runs on this thread.
bool inside_sql_library() {
  return hooks::t_in_family & (1u << static_cast<unsigned>(HookFamily::sql));
}

// The connection's wire client ends (its open rows close, with `why` as their error when not empty).
void end_wire(HttpClientConn* c, std::string_view why) {
  // TLS whose plaintext never came through libssl (a runtime with its own TLS, such as the JVM's, or an
  // SSL object on memory BIOs, which names no socket): the statements were not seen.
  if (c->wire_active && c->wire_tls && !c->tls_fed) counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
  c->wire_tls = c->tls_fed = false;
  if (c->wire && c->wire_active) c->wire->on_end(why);
  delete c->wire;
  c->wire = nullptr;
  c->wire_active = false;
}

// A wire client follows the connection from now on (nothing when it could not be made).
void start_wire(HttpClientConn* c, WireClient* w) {
  end_wire(c, {});
  if (!w) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  c->wire = w;
  c->wire_active = true;
  c->tracker.make_opaque();  // not HTTP: the HTTP tracker is done with it
}

WireEnv wire_env(FdSlot* s, HttpClientConn* c) { return WireEnv{s, c->sink.peer, &c->sink.owner}; }

// After bytes were fed: a client that gave up, or whose connection switched to TLS it is not fed the
// plaintext of, is let go (its socket stays a socket).
void check_wire(FdSlot* s, HttpClientConn* c) {
  if (!c->wire_active) return;
  if (c->wire->stopped()) {
    end_wire(c, {});
  } else if (c->wire->tls_started()) {
    c->wire_tls = true;  // the records are not fed; the plaintext may come through the OpenSSL hooks
    return;
  } else {
    return;
  }
  let_go_if_not_http(s, c);
}

// The program's bytes on a wire connection. A write or read made inside a hooked SQL library means the
// library drives it after all (a libpq connection opened with PQconnectStart, which is not hooked): the
// wire client ends and the library's hooks are the statements' only source.
bool library_took_over(FdSlot* s, HttpClientConn* c) {
  if (!inside_sql_library()) return false;
  c->library = true;
  end_wire(c, {});
  let_go_if_not_http(s, c);
  return true;
}

// True while libssl runs on this thread (ssl_hooks.cpp holds the tls family in SSL_read/SSL_write, the
// handshake and the shutdown).
bool inside_libssl() { return hooks::t_in_family & (1u << static_cast<unsigned>(HookFamily::tls)); }

// TLS records of a wire connection written or read outside libssl, before any plaintext came through
// it: the program does TLS without libssl on this socket (Node's OpenSSL built into node, the JVM's JSSE,
// or libssl on memory BIOs as asyncio does, whose plaintext names no socket), so its statements cannot be
// seen. Counted now, once (end_wire), rather than at the close, which a pooled connection may never reach
// before the process ends; the connection is a plain socket from here on.
bool tls_unseen(FdSlot* s, HttpClientConn* c) {
  if (!c->wire_active || !c->wire_tls || c->tls_fed || inside_libssl()) return false;
  end_wire(c, {});
  let_go_if_not_http(s, c);
  return true;
}

// The owners a runtime listed for this socket's next commands (hint_board.h), handed to a client that
// takes them, before the write's bytes.
void pass_listed_owners(FdSlot* s, HttpClientConn* c) {
  constexpr size_t kMax = 128;
  size_t cap = c->wire->max_listed_owners();
  uint32_t first = 0;
  // Most writes find no list: the owners' array (2 KiB to initialise) is only made for one that does.
  if (cap == 0 || hint::board::listed(s, &first) == 0) return;
  ReqRef owners[kMax];
  size_t k = hint::board::take_list(s, owners, cap < kMax ? cap : kMax, &first);
  if (k) c->wire->on_listed_owners(owners, k, first);
}

void wire_sent(FdSlot* s, HttpClientConn* c, const iovec* iov, int cnt, size_t n) {
  if (library_took_over(s, c) || tls_unseen(s, c)) return;
  if (c->wire_active && !c->wire_tls) pass_listed_owners(s, c);
  for (int i = 0; i < cnt && n > 0 && c->wire_active && !c->wire_tls; ++i) {
    size_t take = iov[i].iov_len < n ? iov[i].iov_len : n;
    if (take) c->wire->on_sent(static_cast<const char*>(iov[i].iov_base), take);
    n -= take;
    check_wire(s, c);
  }
}

// A write on a wire connection whose client inserts into it (the trace context a FastCGI request
// carries, wire_client.h: plan_write): the edits laid out, the kernel's count mapped back.
bool wire_write_through(FdSlot* s, HttpClientConn* c, int fd, const iovec* iov, int cnt, WriteFn write_fn, void* ctx,
                        ssize_t* result) {
  constexpr int kMaxIov = 64;
  if (inside_sql_library() || cnt > kMaxIov) return false;
  int saved = errno;
  iovec out[kMaxIov + WireClient::kWriteExtra];
  int k = c->wire->plan_write(iov, cnt, out);
  if (k == 0) {
    errno = saved;
    return false;
  }
  size_t total = 0;
  for (int i = 0; i < cnt; ++i) total += iov[i].iov_len;
  size_t mine;
  for (;;) {
    ssize_t r = write_fn(fd, out, k, ctx);
    if (r < 0) {
      *result = -1;  // none of the program's bytes went out; errno is the real call's
      return true;
    }
    mine = c->wire->commit_write(static_cast<size_t>(r));
    // Only pending bytes went out: write again (a blocking socket blocks, a non-blocking one says EAGAIN).
    if (mine > 0 || total == 0 || r == 0) break;
    k = c->wire->plan_write(iov, cnt, out);
    if (k == 0) {  // nothing left to insert: the program's bytes as they are
      std::copy(iov, iov + cnt, out);
      k = cnt;
    }
  }
  saved = errno;
  s->add_written(mine);
  wire_sent(s, c, iov, cnt, mine);
  errno = saved;
  *result = static_cast<ssize_t>(mine);
  return true;
}

void wire_received(FdSlot* s, HttpClientConn* c, const char* p, size_t n) {
  if (library_took_over(s, c)) return;
  if (c->wire_tls) {  // TLS records: the plaintext comes through tls_plaintext(), if libssl makes them
    tls_unseen(s, c);
    return;
  }
  c->wire->on_received(p, n);
  check_wire(s, c);
}


// The connection's state for the calling thread while it lives (hold.h). A missed response would leave
// the tracker one response behind for the connection's life, so a descheduled holder is waited for; but
// write_through() holds it across the real write, which may block (a full send buffer), so the wait is
// shorter than a server connection's: a reader must not stall its program for long behind a writer.
class Busy : public Hold {
 public:
  static constexpr uint64_t kMaxWaitNs = 10'000'000;
  explicit Busy(HttpClientConn* c) : Hold(c ? &c->lock : nullptr, kMaxWaitNs) {}
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

// The first bytes written on a connection decide whether it is HTTP/2 (the client preface), PostgreSQL
// (a startup or SSL request) or HTTP/1.x (anything else, left to the tracker to accept or not).
void classify(FdSlot* s, HttpClientConn* c, const iovec* iov, int cnt, const char* scheme) {
  if (!c->fresh) return;
  size_t n;
  const char* p = first_bytes(iov, cnt, &n);
  if (!p) return;
  c->fresh = false;
  char head[24];
  size_t k = 0;
  for (int i = 0; i < cnt && k < sizeof head; ++i) {
    size_t take = std::min(iov[i].iov_len, sizeof head - k);
    memcpy(head + k, iov[i].iov_base, take);
    k += take;
  }
  if (c->wire_active || c->library) return;  // a server that spoke first (MySQL) chose already
  if (inside_sql_library()) {
    c->library = true;
    return;
  }
  if (pg::looks_like_start(head, k)) {
    start_wire(c, pg::make_client(wire_env(s, c)));
    return;
  }
  if (redis::looks_like_command(head, k)) {
    start_wire(c, redis::make_client(wire_env(s, c)));
    return;
  }
  if (memcached::looks_like_command(head, k)) {
    start_wire(c, memcached::make_client(wire_env(s, c)));
    return;
  }
  if (fcgi::looks_like_request(head, k)) {
    start_wire(c, fcgi::make_client(wire_env(s, c)));
    return;
  }
  if (uwsgi::looks_like_request(head, k)) {  // nginx's uwsgi_pass: a packet header, then vars
    start_wire(c, uwsgi::make_client(wire_env(s, c)));
    return;
  }
  if (s->quiet) {  // a Unix socket that speaks none of them: let go (FdSlot::quiet)
    c->tracker.make_opaque();
    return;
  }
  // "PRI " tells the preface from HTTP/1.x methods (POST, PUT, PATCH); a first write shorter than that
  // is taken as HTTP/1.x.
  if (k < 4 || h2::match_preface(head, k) < 0) return;
  if (!c->h2) c->h2 = new (std::nothrow) H2State;
  if (!c->h2) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  c->h2->client.reset();
  c->h2->inj.clear();
  c->h2->sink.scheme = scheme;
  c->h2->sink.peer = c->sink.peer;
  c->h2->sink.owner = &c->sink.owner;
  c->h2_active = true;
}

// A 101 answered the program's `Upgrade: h2c` request (RFC 7540 §3.2): HTTP/2 from the next byte on
// (the server's frames; the program's preface next), the request's call going on as stream 1.
void start_upgraded(HttpClientConn* c, HttpCall& u) {
  if (!c->h2) c->h2 = new (std::nothrow) H2State;
  if (!c->h2) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    u.status = 101;
    c->sink.on_response(u, {});
    return;
  }
  H2Call call;
  call.step = u.step;
  call.span_id = u.span_id;
  call.first_byte_seen = u.first_byte_seen;
  call.request_bytes = u.request_bytes;
  call.response_bytes = u.response_bytes;
  if (live(call.step)) {
    rec::add_attr(call.step, "protocol", "h2");
    rec::add_attr(call.step, "upgrade", "h2c");
  }
  c->h2->client.reset_upgraded(call);
  c->h2->inj.clear();
  c->h2->sink.scheme = c->sink.scheme;
  c->h2->sink.peer = c->sink.peer;
  c->h2->sink.owner = &c->sink.owner;
  c->fresh = false;
  c->h2_active = true;
}

void h2_feed_sent(HttpClientConn* c, const iovec* iov, int cnt, size_t n) {
  for (int i = 0; i < cnt && n > 0; ++i) {
    size_t take = iov[i].iov_len < n ? iov[i].iov_len : n;
    c->h2->client.on_sent(static_cast<const char*>(iov[i].iov_base), take, c->h2->sink);
    n -= take;
  }
}

bool h2_write_through(HttpClientConn* c, FdSlot* s, int fd, const iovec* iov, int cnt, WriteFn write_fn, void* ctx,
                      ssize_t* result);

}  // namespace

bool propagate() {
  static const bool v = env_flag("TXRAY_PROPAGATE", true);
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

}  // namespace http_out

Transaction* wire::statement_tx(ReqRef& owner) { return http_out::call_tx(owner, true); }

namespace http_out {

Transaction* h2_call_tx() {
  if (Transaction* p = tx::process_transaction()) return p;
  return unattr::container();
}

namespace {

// A write on an HTTP/2 connection: traceparent fields go into the HEADERS frames of new requests
// (h2_client.h: plan_insert; h2_inject.h: the byte accounting).
bool h2_write_through(HttpClientConn* c, FdSlot* s, int fd, const iovec* iov, int cnt, WriteFn write_fn, void* ctx,
                      ssize_t* result) {
  H2State* h = c->h2;
  if (h->client.dead()) {
    if (!h->inj.has_pending()) return false;
  }
  int saved = errno;
  constexpr size_t kMaxPlan = H2Injector::kMaxEdits;
  H2Client::Insert plan[kMaxPlan];
  uint64_t spans[kMaxPlan];
  size_t planned = 0;
  size_t total = 0;
  for (int i = 0; i < cnt; ++i) total += iov[i].iov_len;
  h->inj.begin();
  if (propagate() && !h->client.dead() && cnt > 0 && size_t(cnt) + 2 * kMaxPlan + 1 <= sizeof h->out / sizeof h->out[0]) {
    IoBytes bytes{iov, cnt, total};
    planned = h->client.plan_insert(bytes, h->scratch, plan, kMaxPlan);
    // libcurl writes its transfer on the thread that runs it: that thread's request (curl_hooks.cpp's row).
    Transaction* tx = !planned ? nullptr : inside_curl() ? rec::current() : h2_call_tx();
    OutboundContext ctx_out;
    if (tx && outbound_context(tx, &ctx_out)) {
      char prog[H2Injector::kMaxReplace];
      char field[H2Injector::kMaxField];
      std::string shim_ts, shim_bg;
      for (size_t i = 0; i < planned; ++i) {
        size_t flen;
        if (plan[i].own & kOwnTraceParent) {
          // A shim's traceparent: the rest of the context of the request its span was named for.
          spans[i] = plan[i].program_span;
          OutboundContext named = ctx_out;
          if (!span_owner::span_context(spans[i], &shim_ts, &shim_bg)) continue;
          named.tracestate = shim_ts;
          named.baggage = shim_bg;
          flen = hpack_context(named, spans[i], plan[i].own, field, sizeof field);
        } else {
          // Inside libcurl's easy interface the transfer's own row (curl_hooks.cpp) is the call: its id.
          spans[i] = (i == 0 && inside_curl() && t_call_span) ? t_call_span : rec::new_id();
          flen = hpack_context(ctx_out, spans[i], plan[i].own, field, sizeof field);
        }
        size_t plen = plan[i].at - plan[i].frame_at;
        if (!flen || plen > sizeof prog || !bytes.copy(plan[i].frame_at, plen, prog)) continue;
        h->inj.add(plan[i].frame_at, plan[i].at, prog, plan[i].frame_len, field, flen, uint32_t(i));
      }
    }
  }
  if (!h->inj.has_pending() && h->inj.edits() == 0) {
    // nothing to insert, nothing pending: the plain call (the hook reports it through on_sent)
    errno = saved;
    return false;
  }
  size_t mine = 0;
  uint32_t tags[H2Injector::kMaxEdits];
  size_t ntags = 0;
  for (;;) {
    int k = h->inj.gather(iov, cnt, h->out);
    ssize_t r = write_fn(fd, h->out, k, ctx);
    if (r < 0) {
      *result = -1;  // none of the program's bytes went out; errno is the real call's
      return true;
    }
    size_t got_tags = 0;
    mine = h->inj.commit(static_cast<size_t>(r), tags + ntags, &got_tags);
    ntags += got_tags;
    // Only pending bytes went out: write again (the same edits: none of them was reached).
    if (mine > 0 || total == 0 || r == 0) break;
  }
  saved = errno;
  for (size_t i = 0; i < ntags; ++i) h->client.note_span(plan[tags[i]].stream, spans[tags[i]]);
  s->add_written(mine);
  h2_feed_sent(c, iov, cnt, mine);
  errno = saved;
  *result = static_cast<ssize_t>(mine);
  return true;
}

}  // namespace

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
  if (c->h2_active) c->h2->client.on_end(c->h2->sink, "connection reused before the response ended");
  c->h2_active = false;
  end_wire(c, "connection reused before the reply ended");
  c->library = false;
  c->heard = false;
  c->fresh = true;
  s->http_live.store(true, std::memory_order_relaxed);
  // IPv6 literals need brackets in a URL; a Unix socket (port -1) is its path.
  bool v6 = addr.find(':') != std::string_view::npos;
  if (port < 0)
    snprintf(c->sink.peer, sizeof c->sink.peer, "%.*s", int(addr.size()), addr.data());
  else
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
  classify(s, c, iov, cnt, "http");
  if (c->h2_active) return h2_write_through(c, s, fd, iov, cnt, write_fn, ctx, result);
  if (c->wire_active) return wire_write_through(s, c, fd, iov, cnt, write_fn, ctx, result);
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
    unsigned own = 0;
    size_t pos = c->tracker.insert_point(p0, n0, &own);
    char joined[2048];
    if (pos == HeaderInjector::kNoInsert && cnt > 1 && !memchr(p0, '\n', n0)) {
      // The request line may go on in the next iovecs: look at the start of the write in one piece.
      size_t len = 0;
      for (int i = 0; i < cnt && len < sizeof joined; ++i) {
        size_t k = std::min(iov[i].iov_len, sizeof joined - len);
        memcpy(joined + len, iov[i].iov_base, k);
        len += k;
      }
      pos = c->tracker.insert_point(joined, len, &own);
    }
    Transaction* tx = pos != HeaderInjector::kNoInsert ? call_tx(c->sink.owner, false) : nullptr;
    OutboundContext ctx_out;
    if (tx && outbound_context(tx, &ctx_out)) {
      span = (inside_curl() && t_call_span) ? t_call_span : rec::new_id();
      line_len = format_context_lines(ctx_out, span, own, line, sizeof line);
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
  classify(s, c, iov, cnt, "http");
  if (c->h2_active) {
    h2_feed_sent(c, iov, cnt, n);
    errno = saved;
    return;
  }
  if (c->wire_active) {
    wire_sent(s, c, iov, cnt, n);
    errno = saved;
    return;
  }
  feed_sent(c, iov, cnt, n, 0);
  let_go_if_not_http(s, c);
  errno = saved;
}

void on_sent_opaque(FdSlot* s, uint64_t n) {
  HttpClientConn* c = http_conn(s);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  if (c->h2_active) {  // frames the agent cannot see: the connection cannot be followed any more
    c->h2->client.on_end(c->h2->sink, "HTTP/2 connection no longer followed (sendfile)");
    c->h2_active = false;
    c->tracker.make_opaque();
    errno = saved;
    return;
  }
  if (c->wire_active && !c->wire_tls && c->wire->on_sent_opaque(n)) {  // a body the client only counts
    errno = saved;
    return;
  }
  if (c->wire_active) {  // bytes the parser cannot see: it cannot follow the stream any more
    counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
    end_wire(c, "wire protocol not followed (sendfile)");
    let_go_if_not_http(s, c);
    errno = saved;
    return;
  }
  c->tracker.on_sent_opaque(n, c->sink);
  let_go_if_not_http(s, c);
  errno = saved;
}

void on_received(FdSlot* s, const char* p, size_t n) {
  HttpClientConn* c = http_conn(s);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  bool first = !c->heard;
  c->heard = true;
  // A server that speaks first: MySQL's greeting, read before the program wrote anything.
  if (first && c->fresh && !c->wire_active && !c->h2_active && !c->library) {
    if (inside_sql_library()) c->library = true;
    else if (mysql::looks_like_greeting(p, n)) start_wire(c, mysql::make_client(wire_env(s, c)));
    if (!c->wire_active && s->quiet) c->tracker.make_opaque();  // a Unix socket: wire protocols only
  }
  if (c->wire_active) {
    wire_received(s, c, p, n);
  } else if (c->h2_active) {
    c->h2->client.on_received(p, n, c->h2->sink);
  } else {
    size_t used = c->tracker.on_received(p, n, c->sink);
    if (HttpCall u; c->tracker.take_upgraded(&u)) {
      start_upgraded(c, u);
      if (c->h2_active && used < n) c->h2->client.on_received(p + used, n - used, c->h2->sink);
    }
    let_go_if_not_http(s, c);
  }
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
  if (c->wire_active) end_wire(c, "connection closed by the server before the reply ended");
  else if (c->h2_active) c->h2->client.on_end(c->h2->sink, "connection closed by the server before the response ended");
  else c->tracker.on_end(c->sink);
  errno = saved;
}

void on_close(FdSlot* s, int fd) {
  hint::board::clear(fd);
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  Busy b(c);
  if (!b) return;
  int saved = errno;
  if (c->wire_active) {
    end_wire(c, "connection closed before the reply ended");
  } else if (c->h2_active) {
    c->h2->client.on_end(c->h2->sink, {});
    c->h2->inj.clear();
    c->h2_active = false;
  } else if (!c->tracker.opaque()) {
    c->tracker.on_end(c->sink);
  }
  end_wire(c, {});
  c->library = false;
  c->heard = false;
  c->fresh = true;
  drop_preopened(c);
  c->tracker = HttpClientTracker{};
  c->inj.clear();
  errno = saved;
}

namespace {
// The client state of outbound socket fd while the agent follows it, else nullptr (with *slot set).
HttpClientConn* followed_conn(int fd, FdSlot** slot) {
  FdSlot* s = *slot = fds::peek(fd);
  if (!s || s->kind.load(std::memory_order_relaxed) != FdKind::outbound || !has_client(s)) return nullptr;
  return s->client.load(std::memory_order_acquire);
}
}  // namespace

bool tls_wire(int fd) {
  FdSlot* s;
  HttpClientConn* c = followed_conn(fd, &s);
  Busy b(c);
  return b && c->wire_active && c->wire_tls;
}

bool tls_first_plaintext(int fd, const char* p, size_t n) {
  FdSlot* s = fds::peek(fd);
  if (!s || s->kind.load(std::memory_order_relaxed) != FdKind::outbound || s->quiet) return false;
  HttpClientConn* c = s->client.load(std::memory_order_acquire);
  Busy b(c);
  if (!b || c->wire_active || c->library || c->h2_active || inside_sql_library()) return false;
  const size_t k = n < 24 ? n : 24;
  WireClient* w;
  if (redis::looks_like_command(p, k)) w = redis::make_client(wire_env(s, c));
  else if (memcached::looks_like_command(p, k)) w = memcached::make_client(wire_env(s, c));
  else return false;
  int saved = errno;
  start_wire(c, w);
  if (c->wire_active) {
    c->wire_tls = c->tls_fed = true;  // the socket's records are never fed, the plaintext always
    s->http_live.store(true, std::memory_order_relaxed);  // its close ends the client's rows
  }
  errno = saved;
  return c->wire_active;
}

bool tls_plaintext(int fd, bool sent, const char* p, size_t n) {
  FdSlot* s;
  HttpClientConn* c = followed_conn(fd, &s);
  Busy b(c);
  if (!b || !c->wire_active || !c->wire_tls) return false;
  int saved = errno;
  c->tls_fed = true;
  if (sent) pass_listed_owners(s, c);
  if (sent) c->wire->on_sent(p, n);
  else c->wire->on_received(p, n);
  if (c->wire->stopped()) {
    end_wire(c, {});
    let_go_if_not_http(s, c);
  }
  errno = saved;
  return true;
}

}  // namespace http_out

// ---------------------------------------------------------------------------------------------------

void CallSink::on_request(HttpCall& c, const HttpRequestHead& h) {
  if (http_out::inside_curl()) {  // the curl hook records this transfer
    if (c.span_id && !http_out::t_call_span)
      http_out::remember_curl_request(c.span_id, http_call_url(scheme, h.host, h.target, peer));
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
  std::string url = http_call_url(scheme, h.host, h.target, peer);
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

// ---------------------------------------------------------------------------------------------------

void H2Sink::on_request(H2Call& c, const h2::HeaderList& h) {
  if (http_out::inside_curl()) return;  // the curl hook records the transfer
  if (owner) *owner = ReqRef{};  // a connect-time owner names no stream of a multiplexed connection
  // A span a runtime shim named for one of this process's requests (the program's own traceparent
  // carries it): the row is that request's, whichever thread writes it (span_owner.h).
  // Unnested: the streams one thread writes overlap without nesting (gRPC's C core writes many callers'
  // HEADERS from one thread); nested, the first to end closed the others (a 400 ms call shown as 211 ms).
  if (c.span_id && span_owner::enabled() && !tx::process_transaction()) {
    if (Transaction* mine = span_owner::take(c.span_id)) {
      c.step = rec::open_unnested(mine, StepKind::HTTP_CALL);  // nothing when the request has ended meanwhile
      if (c.step) c.step.held = span_owner::generation();
      else span_owner::release(mine);
    }
  }
  if (!c.step) {
    Transaction* tx = http_out::h2_call_tx();
    if (!tx) return;
    c.step = rec::open_unnested(tx, StepKind::HTTP_CALL);
  }
  if (!c.step) return;
  if (!c.span_id) c.span_id = rec::new_id();
  rec::set_id(c.step, c.span_id);
  std::string_view authority = h.get(":authority");
  std::string url;
  if (c.grpc) {
    url = "grpc://";
    url.append(authority.empty() ? std::string_view(peer) : authority.substr(0, 256));
    url.append(h.get(":path").substr(0, 2048));
  } else {
    url = http_call_url(scheme, authority, h.get(":path"), peer);
  }
  rec::set_text(c.step, url);
  rec::add_attr(c.step, "method", h.get(":method"));
  rec::add_attr(c.step, "protocol", "h2");
  if (c.grpc) rec::add_attr(c.step, "rpc", "grpc");
}

void H2Sink::on_first_byte(H2Call& c) {
  if (!http_out::live(c.step)) return;
  char v[24];
  snprintf(v, sizeof v, "%llu", static_cast<unsigned long long>((rec::now_ns() - c.step.start_mono_ns) / 1000));
  rec::add_attr(c.step, "ttfb_us", v);
}

void H2Sink::on_response(H2Call& c, std::string_view error) {
  // A row filed under a shim-named request holds a reference on it: given back once the row is done.
  struct Held {
    StepRef& s;
    ~Held() {
      if (s.held && s.held == span_owner::generation()) span_owner::release(s.tx);
      s.held = 0;
    }
  } held{c.step};
  if (!http_out::live(c.step)) return;
  rec::set_status(c.step, c.status);
  rec::add_bytes(c.step, c.response_bytes, c.request_bytes);
  std::string err(error);
  if (c.grpc_status >= 0) {
    char v[16];
    snprintf(v, sizeof v, "%d", c.grpc_status);
    rec::add_attr(c.step, "grpc_status", v);
    if (!c.grpc_message.empty()) rec::add_attr(c.step, "grpc_message", c.grpc_message);
    if (err.empty() && c.grpc_status != 0) err = grpc_error_text(c.grpc_status, c.grpc_message);
  } else if (c.grpc && err.empty()) {
    err = "gRPC response without grpc-status";
  }
  if (err.empty() && c.status >= 500) {
    char m[32];
    snprintf(m, sizeof m, "HTTP %d", c.status);
    err = m;
  }
  if (!err.empty()) rec::set_error(c.step, err);
  uint64_t elapsed = rec::close(c.step);
  rec::add_totals(c.step.tx, {.call_ns = elapsed, .call_count = 1});
}

}  // namespace txray
