#include "protocols/http1/http_conn.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "core/attribution.h"
#include "core/counters.h"
#include "core/redact.h"
#include "protocols/fastcgi/fastcgi_conn.h"
#include "protocols/http2/h2_conn.h"
#include "protocols/uwsgi/uwsgi_conn.h"
#include "core/recorder.h"
#include "protocols/tracecontext/context.h"
#include "core/transaction.h"

namespace txray {

HttpConn::~HttpConn() {
  delete h2;
  delete fcgi;
  delete uwsgi;
}  // the agent keeps its slots' HttpConns for good; tests do not

void HttpConn::reset(std::string_view client, int fd_) {
  if (in_request()) on_close();  // the previous connection on this number ended unseen: its request ends now
  client_addr.assign(client);
  fd = fd_;
  seq = 0;
  buf.clear();
  scanned = 0;
  watching = true;
  req_body.reset(http::BodyFramer::Mode::none);
  tx = nullptr;
  resp.reset(false);
  h2_active = false;
  upgrade_h2c = false;
  gateway = Gateway::none;
}

void HttpConn::forget_after_fork() {
  tx = nullptr;
  if (h2) h2->forget();
  if (fcgi) fcgi->forget();
  if (uwsgi) uwsgi->forget();
}

Transaction* HttpConn::request(uint64_t txid) const {
  switch (gateway) {
    case Gateway::fastcgi: return fcgi->request(txid);
    case Gateway::uwsgi: return uwsgi->request(txid);
    case Gateway::none: break;
  }
  return (tx && (!txid || tx->txid == txid)) ? tx : nullptr;
}

bool HttpConn::in_request() const {
  switch (gateway) {
    case Gateway::fastcgi: return fcgi->busy();
    case Gateway::uwsgi: return uwsgi->busy();
    case Gateway::none: break;
  }
  return tx != nullptr;
}

// The first bytes of the connection are a FastCGI or uwsgi request (or a prefix of one: wait for more):
// from now on that tracker follows the connection. True when buf was taken (or more bytes are needed).
// HTTP/1.x request lines begin with a token character, never with the 0x01 / 0x00 these begin with.
bool HttpConn::try_gateway() {
  if (seq != 0 || tx || buf.empty()) return false;
  int f = fcgi::looks_like_begin(buf.data(), buf.size());
  int u = uwsgi::looks_like_packet(buf.data(), buf.size());
  if (f < 0 && u < 0) return false;
  if (f == 0 || u == 0) return true;
  Gateway g = f > 0 ? Gateway::fastcgi : Gateway::uwsgi;
  if (g == Gateway::fastcgi && !fcgi) fcgi = new (std::nothrow) FcgiServer;
  if (g == Gateway::uwsgi && !uwsgi) uwsgi = new (std::nothrow) UwsgiServer;
  if ((g == Gateway::fastcgi && !fcgi) || (g == Gateway::uwsgi && !uwsgi)) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    watching = false;
    buf.clear();
    return true;
  }
  if (g == Gateway::fastcgi) fcgi->reset(client_addr, fd);
  else uwsgi->reset(client_addr, fd);
  gateway = g;
  std::string first;
  first.swap(buf);
  if (!gateway_read(first.data(), first.size())) watching = false;
  return true;
}

bool HttpConn::gateway_read(const char* p, size_t n) {
  return gateway == Gateway::fastcgi ? fcgi->on_read(p, n) : uwsgi->on_read(p, n);
}

// The first bytes of the connection are the HTTP/2 client preface (or a prefix of it: wait for more):
// from now on h2 follows the connection. True when buf was taken (or more bytes are needed).
bool HttpConn::try_h2() {
  if (seq != 0 || tx) return false;
  int m = h2::match_preface(buf.data(), buf.size());
  if (m < 0) return false;
  if (m == 0) return true;
  if (!h2) h2 = new (std::nothrow) H2Server;
  if (!h2) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    watching = false;
    buf.clear();
    return true;
  }
  h2->reset(client_addr);
  h2_active = true;
  std::string first;
  first.swap(buf);
  if (!h2->on_read(first.data(), first.size())) watching = false;
  return true;
}

void HttpConn::on_read(const char* p, size_t n) {
  if (!watching || n == 0) return;
  if (h2_active) {
    if (!h2->on_read(p, n)) watching = false;
    return;
  }
  if (gateway != Gateway::none) {
    if (!gateway_read(p, n)) watching = false;
    return;
  }
  if (!req_body.done()) {
    size_t used = req_body.feed(p, n);
    if (tx) {
      tx->bytes_read += used;
      ++tx->io_calls;
    }
    p += used;
    n -= used;
    if (n == 0) return;
  }
  if (buf.empty() && !tx && n <= http::kMaxHead && (seq != 0 || h2::match_preface(p, n) < 0) &&
      try_begin_in_place(p, n))
    return;
  if (buf.size() + n > http::kMaxHead) {
    // A head this large (or many pipelined requests waiting) is not followed: stop watching.
    watching = false;
    buf.clear();
    return;
  }
  buf.append(p, n);
  if (try_h2() || try_gateway()) return;
  try_begin();
}

// A read that holds a whole request head with nothing pending before it (the usual keep-alive
// request): parsed where it lies, no copy into buf. False when it does not (part of a head,
// not a request): the buffered path takes the bytes as before, so the outcome never depends on how the
// program's reads were split.
bool HttpConn::try_begin_in_place(const char* p, size_t n) {
  std::string_view data(p, n);
  if (http::looks_like_request(data) != 1) return false;
  // The head's end found in the pass that parses it (find_head_end was a pass of its own).
  http::RequestHead head;
  bool ok;
  size_t end = http::parse_request(data, &head, &ok);
  if (end == 0) return false;
  if (!ok) {
    watching = false;
    return true;
  }
  begin_parsed(head, end);
  // What followed the head in the same read: this request's body, then possibly the next request.
  size_t used = req_body.feed(p + end, n - end);
  tx->bytes_read += used;
  if (end + used < n) buf.assign(p + end + used, n - end - used);
  scanned = 0;
  return true;
}

// Begins the transaction of a complete request head (head: its bytes, valid during the call). False:
// not a valid request head.
bool HttpConn::begin_request(std::string_view head_bytes) {
  http::RequestHead head;
  if (!http::parse_request_head(head_bytes, &head)) return false;
  begin_parsed(head, head_bytes.size());
  return true;
}

// The request's trace headers (rare enough to be out of line): lines after the first of a header are
// found in the head again (it starts at its method).
__attribute__((noinline)) void HttpConn::trace_headers(const http::RequestHead& head, size_t head_size) {
  constexpr size_t kMaxLines = 16;  // more lines of one header: the list is dropped
  std::string_view head_bytes(head.method.data(), head_size);
  std::string_view ts[kMaxLines], bg[kMaxLines];
  InboundContext in;
  in.traceparent = head.traceparent;
  in.traceparents = head.traceparents;
  if (head.traceparents == 1) {  // tracestate is not looked at otherwise
    in.tracestate = ts;
    if (head.tracestates == 1) ts[0] = head.tracestate, in.tracestates = 1;
    else if (head.tracestates > 1) in.tracestates = http::header_lines(head_bytes, "tracestate", ts, kMaxLines);
    if (in.tracestates > kMaxLines) {
      in.tracestates = 0;
      rec::add_tx_attr(tx, "tracestate_dropped", "too many lines");
    }
  }
  in.baggage = bg;
  if (head.baggages == 1) bg[0] = head.baggage, in.baggages = 1;
  else if (head.baggages > 1) in.baggages = http::header_lines(head_bytes, "baggage", bg, kMaxLines);
  if (in.baggages > kMaxLines) {
    in.baggages = 0;
    rec::add_tx_attr(tx, "baggage_dropped", "too many lines");
  }
  accept_context(tx, in);
}

// Begins the transaction of a parsed request head of head_size bytes (its views valid during the call).
void HttpConn::begin_parsed(const http::RequestHead& head, size_t head_size) {
  // "METHOD path" built on the stack: no allocation (tx::begin keeps 1,024 bytes of a name).
  char name[1024];
  size_t len = head.method.size() < sizeof name ? head.method.size() : sizeof name;
  std::memcpy(name, head.method.data(), len);
  if (len < sizeof name) name[len++] = ' ';
  const redact::Policy& policy = redact::policy();
  if (__builtin_expect(redact::masks_paths(policy), 0)) {
    // Token segments a TXRAY_MASK_PATH template names never reach the name ("GET /reset/*").
    std::string path;
    redact::append_path(policy, head.path, path);
    size_t take = path.size() < sizeof name - len ? path.size() : sizeof name - len;
    std::memcpy(name + len, path.data(), take);
    len += take;
  } else {
    size_t take = head.path.size() < sizeof name - len ? head.path.size() : sizeof name - len;
    std::memcpy(name + len, head.path.data(), take);
    len += take;
  }
  tx = tx::begin(std::string_view(name, len), "http");
  tx->client_addr = client_addr;
  tx->bytes_read = head_size;
  auto attr = [&](std::string_view key, std::string_view value) {
    Attr& a = tx->attrs.emplace_back();
    a.key.assign(key);
    a.value.assign(value);
  };
  if (!head.query.empty()) {  // values masked unless kept by name or raw (core/redact.h)
    Attr& a = tx->attrs.emplace_back();
    a.key.assign("query");
    a.value.clear();
    redact::append_query(policy, head.query.substr(0, 1024), a.value);
  }
  if (!head.host.empty()) attr("host", head.host.substr(0, 256));
  if (!head.user_agent.empty()) attr("user_agent", head.user_agent);
  if (__builtin_expect(head.traceparents | head.tracestates | head.baggages, 0)) trace_headers(head, head_size);
  ++seq;
  upgrade_h2c = head.upgrade_h2c;
  attr::request_began(tx, fd);
  resp.reset(head.method == "HEAD");
  if (head.chunked) req_body.reset(http::BodyFramer::Mode::chunked);
  else if (head.content_length > 0) req_body.reset(http::BodyFramer::Mode::length, uint64_t(head.content_length));
  else req_body.reset(http::BodyFramer::Mode::none);
}

// The request asked for `Upgrade: h2c` and the server answered 101 (RFC 7540 §3.2): from the next
// byte on, the server writes HTTP/2 frames (`rest`: those written with the 101) and the client sends the
// preface and its frames. The request becomes stream 1, whose response is the request's: its
// transaction stays open until then, but — as every stream of a multiplexed connection — it is no
// thread's current transaction any more (h2_conn.h).
void HttpConn::upgrade_h2(const char* rest, size_t n) {
  Transaction* t = tx;
  tx = nullptr;
  upgrade_h2c = false;
  if (!h2) h2 = new (std::nothrow) H2Server;
  if (!h2 || !req_body.done()) {
    // No memory, or the request body was not read to its end (its rest would come before the preface):
    // the request ends at its 101 and the connection is not followed further.
    if (!h2) counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    watching = false;
    buf.clear();
    tx::end(t, 101, "");
    return;
  }
  tx::release_current(t);
  h2->reset_upgraded(client_addr, t);
  h2_active = true;
  std::string read_ahead;  // bytes the client sent after the request (its preface), read before the 101
  read_ahead.swap(buf);
  scanned = 0;
  // In the order the program saw them: what it read before writing the 101, then the rest of the write.
  if (!read_ahead.empty() && !h2->on_read(read_ahead.data(), read_ahead.size())) watching = false;
  if (watching && n && !h2->on_write(rest, n)) watching = false;
}

void HttpConn::try_begin() {
  while (watching && !tx && !buf.empty()) {
    int looks = http::looks_like_request(buf);
    if (looks < 0) {
      watching = false;
      buf.clear();
      return;
    }
    size_t end = http::find_head_end(buf, scanned);
    scanned = buf.size();
    if (looks == 0 || end == 0) return;
    if (!begin_request(std::string_view(buf).substr(0, end))) {
      watching = false;
      buf.clear();
      return;
    }
    // What followed the head in the same read: this request's body, then possibly the next request.
    size_t used = req_body.feed(buf.data() + end, buf.size() - end);
    tx->bytes_read += used;
    buf.erase(0, end + used);
    scanned = 0;
  }
}

void HttpConn::on_write(const char* p, size_t n) {
  if (h2_active) {
    if (watching && !h2->on_write(p, n)) watching = false;
    return;
  }
  if (gateway != Gateway::none) {
    if (watching && !(gateway == Gateway::fastcgi ? fcgi->on_write(p, n) : uwsgi->on_write(p, n))) watching = false;
    return;
  }
  if (tx) ++tx->io_calls;
  while (tx && n > 0) {
    size_t used = resp.feed(p, n);
    tx->bytes_written += used;
    p += used;
    n -= used;
    if (!resp.done()) return;
    if (resp.status() == 101 && upgrade_h2c) {
      upgrade_h2(p, n);
      return;
    }
    finish(resp.status(), nullptr);
    // Anything written after a complete response belongs to the next (pipelined) request's response.
  }
}

void HttpConn::on_write_opaque(uint64_t n) {
  if (h2_active) {  // frames the agent cannot see: the rest of the connection cannot be followed
    if (watching) h2->on_close();
    watching = false;
    return;
  }
  if (gateway == Gateway::fastcgi) {  // records the agent cannot see: the stream cannot be followed
    if (watching) fcgi->on_close();
    watching = false;
    return;
  }
  if (gateway == Gateway::uwsgi) {  // the response body of a file wrapper (uWSGI's sendfile)
    if (watching) uwsgi->on_write_opaque(n);
    return;
  }
  if (!tx) return;
  tx->bytes_written += n;
  ++tx->io_calls;
  resp.feed_opaque(n);
  if (resp.done()) finish(resp.status(), nullptr);
}

void HttpConn::on_close() {
  // First: finish() begins the next pipelined request, and none may begin on a closed connection (it
  // was never ended: a leaked transaction per close; found by agent.fuzz_http_inbound).
  watching = false;
  buf.clear();
  if (h2_active) {
    h2->on_close();
    h2_active = false;
  }
  if (gateway == Gateway::fastcgi) fcgi->on_close();
  if (gateway == Gateway::uwsgi) uwsgi->on_close();
  gateway = Gateway::none;
  if (tx) {
    if (resp.until_close()) finish(resp.status(), nullptr);
    else finish(resp.status(), "connection closed before the response was complete");
  }
}

void HttpConn::finish(int status, const char* error) {
  Transaction* t = tx;
  tx = nullptr;
  char msg[32];
  if (!error && status >= 500) {
    std::snprintf(msg, sizeof msg, "HTTP %d", status);
    error = msg;
  }
  tx::end(t, status, error ? error : "");
  try_begin();
}

}  // namespace txray
