#include "protocols/http2/h2_conn.h"

#include <cstdio>
#include <cstdlib>

#include "core/counters.h"
#include "core/redact.h"
#include "protocols/http2/h2_client.h"
#include "core/span_owner.h"
#include "protocols/tracecontext/context.h"
#include "core/transaction.h"

namespace txray {

namespace {
// A request's trace headers (tracecontext/context.h decides): every field of each, in order (a
// multi-line header arrives as several fields).
void h2_trace_headers(Transaction* t, const h2::HeaderList& h) {
  constexpr size_t kMaxLines = 16;
  std::string_view ts[kMaxLines], bg[kMaxLines];
  InboundContext in;
  in.tracestate = ts;
  in.baggage = bg;
  bool ts_over = false, bg_over = false;
  for (const h2::Field& f : h.fields) {
    if (f.name.empty() || (f.name[0] != 't' && f.name[0] != 'b')) continue;
    if (f.name == "traceparent") {
      if (!in.traceparents++) in.traceparent = f.value;
    } else if (f.name == "tracestate") {
      if (in.tracestates < kMaxLines) ts[in.tracestates++] = f.value;
      else ts_over = true;
    } else if (f.name == "baggage") {
      if (in.baggages < kMaxLines) bg[in.baggages++] = f.value;
      else bg_over = true;
    }
  }
  if (!in.traceparents && !in.tracestates && !in.baggages) return;
  if (ts_over) {
    in.tracestates = 0;
    if (in.traceparents == 1) t->attrs.push_back({"tracestate_dropped", "too many lines"});
  }
  if (bg_over) {
    in.baggages = 0;
    t->attrs.push_back({"baggage_dropped", "too many lines"});
  }
  accept_context(t, in);
}
}  // namespace

namespace {

bool is_grpc(std::string_view content_type) { return content_type.substr(0, 16) == "application/grpc"; }

int to_int(std::string_view v, int dflt) {
  if (v.empty() || v.size() > 9) return dflt;
  int r = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return dflt;
    r = r * 10 + (c - '0');
  }
  return r;
}

}  // namespace

class H2Server::ReqSide final : public h2::Handler {
 public:
  explicit ReqSide(H2Server& s) : s_(s) {}
  void on_headers(uint32_t id, const h2::HeaderList& h, bool end_stream, size_t wire) override {
    if (Stream* st = s_.find(id)) {  // trailers of the request
      if (st->tx) st->tx->bytes_read += wire;
      if (end_stream) st->request_done = true;
      return;
    }
    s_.begin(id, h, wire, end_stream);
  }
  void on_data(uint32_t id, size_t len, bool end_stream) override {
    if (Stream* st = s_.find(id)) {
      if (st->tx) st->tx->bytes_read += h2::kFrameHeader + len;
      if (end_stream) st->request_done = true;
    }
  }
  void on_reset(uint32_t id, uint32_t code) override {
    if (Stream* st = s_.find(id)) {
      char e[64];
      std::snprintf(e, sizeof e, "stream reset by the client (RST_STREAM %u)", code);
      s_.finish(*st, e);
    }
  }

 private:
  H2Server& s_;
};

class H2Server::RespSide final : public h2::Handler {
 public:
  explicit RespSide(H2Server& s) : s_(s) {}
  void on_headers(uint32_t id, const h2::HeaderList& h, bool end_stream, size_t wire) override {
    Stream* st = s_.find(id);
    if (!st) return;
    if (st->tx) st->tx->bytes_written += wire;
    s_.response_headers(*st, h);
    if (end_stream) s_.finish(*st, nullptr);
  }
  void on_data(uint32_t id, size_t len, bool end_stream) override {
    Stream* st = s_.find(id);
    if (!st) return;
    if (st->tx) st->tx->bytes_written += h2::kFrameHeader + len;
    if (end_stream) s_.finish(*st, nullptr);
  }
  void on_reset(uint32_t id, uint32_t code) override {
    if (Stream* st = s_.find(id)) {
      char e[64];
      std::snprintf(e, sizeof e, "stream reset by the server (RST_STREAM %u)", code);
      s_.finish(*st, e);
    }
  }

 private:
  H2Server& s_;
};

H2Server::H2Server() = default;

H2Server::~H2Server() { on_close(); }

void H2Server::reset(std::string_view client) {
  on_close();
  client_.assign(client);
  in_.reset(true);
  out_.reset(false);
}

void H2Server::reset_upgraded(std::string_view client, Transaction* t) {
  reset(client);
  if (!t) return;
  Stream& st = streams_[used_++];  // reset() left every slot free
  st = Stream{};
  st.id = 1;
  st.tx = t;
  st.request_done = true;
  t->attrs.push_back({"protocol", "h2"});
  t->attrs.push_back({"upgrade", "h2c"});
}

bool H2Server::dead() const { return in_.dead(); }

size_t H2Server::open_streams() const {
  size_t k = 0;
  for (size_t i = 0; i < used_; ++i) k += streams_[i].id != 0;
  return k;
}

H2Server::Stream* H2Server::find(uint32_t id) {
  for (size_t i = 0; i < used_; ++i)
    if (streams_[i].id == id) return &streams_[i];
  return nullptr;
}

void H2Server::begin(uint32_t id, const h2::HeaderList& h, size_t wire, bool end_stream) {
  if (id == 0) return;  // 0 marks a free slot (and is no stream)
  Stream* st = nullptr;
  for (size_t i = 0; i < used_ && !st; ++i)
    if (streams_[i].id == 0) st = &streams_[i];
  if (!st && used_ < kMaxStreams) st = &streams_[used_++];
  if (!st) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::string_view method = h.get(":method"), path = h.get(":path");
  if (method.empty()) return;  // not a request (a stray response block): nothing to follow
  *st = Stream{};
  st->id = id;
  st->grpc = is_grpc(h.get("content-type"));
  std::string name;
  name.reserve(method.size() + 1 + path.size());
  name.append(method).append(" ");
  // The query string is kept apart, as for HTTP/1.x.
  std::string_view p = path, query;
  if (size_t q = p.find('?'); q != std::string_view::npos) {
    query = p.substr(q + 1);
    p = p.substr(0, q);
  }
  redact::append_path(redact::policy(), p.substr(0, 2048), name);  // TXRAY_MASK_PATH's segments masked
  Transaction* t = tx::begin(name, st->grpc ? "grpc" : "http");
  st->tx = t;
  if (!t) return;
  t->client_addr = client_;
  t->bytes_read = wire;
  if (!query.empty()) {  // values masked unless kept by name or raw (core/redact.h)
    std::string q;
    redact::append_query(redact::policy(), query.substr(0, 1024), q);
    t->attrs.push_back({"query", std::move(q)});
  }
  if (auto a = h.get(":authority"); !a.empty()) t->attrs.push_back({"host", std::string(a.substr(0, 256))});
  if (auto ua = h.get("user-agent"); !ua.empty()) t->attrs.push_back({"user_agent", std::string(ua.substr(0, 512))});
  t->attrs.push_back({"protocol", "h2"});
  h2_trace_headers(t, h);
  // A runtime shim may name its handler's outbound calls by this caller span (span_owner.h).
  if (t->parent_span_id && span_owner::enabled()) st->indexed = span_owner::request_began(t);
  st->request_done = end_stream;
}

void H2Server::response_headers(Stream& s, const h2::HeaderList& h) {
  if (!s.response_headers) {
    s.response_headers = true;
    s.status = to_int(h.get(":status"), 0);
    if (s.status >= 100 && s.status < 200) s.response_headers = false;  // informational: the real one follows
  }
  if (h.has("grpc-status")) {
    s.grpc_status = to_int(h.get("grpc-status"), 2);
    s.grpc_message.assign(h.get("grpc-message").substr(0, 1024));
  }
}

void H2Server::finish(Stream& s, const char* error) {
  Transaction* t = s.tx;
  bool indexed = s.indexed;
  s.tx = nullptr;
  s.id = 0;
  s.indexed = false;
  while (used_ > 0 && streams_[used_ - 1].id == 0) --used_;
  if (!t) return;
  std::string err = error ? error : "";
  if (s.grpc_status >= 0) {
    char v[16];
    std::snprintf(v, sizeof v, "%d", s.grpc_status);
    t->attrs.push_back({"grpc_status", v});
    if (!s.grpc_message.empty()) t->attrs.push_back({"grpc_message", grpc_unescape(s.grpc_message)});
    if (err.empty() && s.grpc_status != 0) err = grpc_error_text(s.grpc_status, s.grpc_message);
  } else if (s.grpc && err.empty() && s.status == 200) {
    err = "gRPC response without grpc-status";
  }
  if (err.empty() && s.status >= 500) {
    char m[32];
    std::snprintf(m, sizeof m, "HTTP %d", s.status);
    err = m;
  }
  if (indexed) span_owner::request_ended(t);  // no call named for it may be filed under it any more
  tx::end(t, s.status, err);
}

void H2Server::give_up() {
  for (size_t i = 0; i < used_; ++i)
    if (streams_[i].id) finish(streams_[i], "HTTP/2 connection no longer followed (frames not understood)");
}

bool H2Server::on_read(const char* p, size_t n) {
  if (in_.dead()) return false;
  ReqSide side(*this);
  if (!in_.feed(p, n, side)) {
    give_up();
    return false;
  }
  return true;
}

bool H2Server::on_write(const char* p, size_t n) {
  if (out_.dead()) return !in_.dead();
  RespSide side(*this);
  if (!out_.feed(p, n, side)) {
    give_up();
    in_.stop();  // both directions are given up together
    return false;
  }
  return true;
}

void H2Server::forget() {
  for (size_t i = 0; i < used_; ++i) streams_[i] = Stream{};
  used_ = 0;
}

void H2Server::on_close() {
  for (size_t i = 0; i < used_; ++i)
    if (streams_[i].id) finish(streams_[i], "connection closed before the response was complete");
  used_ = 0;
}

}  // namespace txray
