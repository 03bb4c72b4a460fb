#include "protocols/fastcgi/fastcgi_conn.h"

#include <cstdio>
#include <cstring>

#include "core/attribution.h"
#include "core/counters.h"
#include "core/recorder.h"
#include "core/transaction.h"

namespace txray {
namespace {

void put_attr(Transaction* tx, std::string_view key, std::string_view value) {
  Attr& a = tx->attrs.emplace_back();
  a.key.assign(key);
  a.value.assign(value);
}

}  // namespace

// Records the web server sends (what the program reads).
struct FcgiServer::ReadSink final : fcgi::RecordReader::Sink, fcgi::NameValueReader::Sink {
  FcgiServer& s;
  Req* cur = nullptr;  // the request of the PARAMS record being read
  explicit ReadSink(FcgiServer& srv) : s(srv) {}

  void on_header(const fcgi::Header& h) override {
    if (h.type == fcgi::kBeginRequest && h.id != 0) s.begin(h.id);
  }
  void on_content(const fcgi::Header& h, const char* p, size_t n) override {
    Req* r = h.id ? s.find(h.id) : nullptr;
    if (!r) return;
    switch (h.type) {
      case fcgi::kBeginRequest:
        while (n && r->begin_got < sizeof r->begin_body) r->begin_body[r->begin_got++] = uint8_t(*p++), --n;
        break;
      case fcgi::kParams:
        if (!r->params_done) {
          cur = r;
          r->nv.feed(p, n, *this);
          cur = nullptr;
        }
        break;
      case fcgi::kStdin:
        if (r->tx) r->tx->bytes_read += n;
        break;
      default:
        break;
    }
  }
  void on_record_end(const fcgi::Header& h) override {
    Req* r = h.id ? s.find(h.id) : nullptr;
    if (!r) return;
    if (h.type == fcgi::kParams && h.content == 0 && !r->params_done) s.params_done(*r);
    if (h.type == fcgi::kAbortRequest) r->aborted = true;
  }
  bool wanted(std::string_view name) override { return CgiVars::wanted(name); }
  void on_pair(std::string_view name, std::string_view value, bool truncated) override {
    cur->vars.take(name, value, truncated);
  }
};

// Records the application sends (what the program writes).
struct FcgiServer::WriteSink final : fcgi::RecordReader::Sink {
  FcgiServer& s;
  explicit WriteSink(FcgiServer& srv) : s(srv) {}
  void on_header(const fcgi::Header& h) override {
    if (h.type != fcgi::kEndRequest) return;
    if (Req* r = h.id ? s.find(h.id) : nullptr) {
      r->end_seen = true;
      r->end_body_got = 0;
      r->protocol_status = 0;
    }
  }
  void on_content(const fcgi::Header& h, const char* p, size_t n) override {
    Req* r = h.id ? s.find(h.id) : nullptr;
    if (!r) return;
    if (h.type == fcgi::kStdout) {
      if (r->tx) r->tx->bytes_written += n;
      r->cgi.feed(p, n);
    } else if (h.type == fcgi::kEndRequest) {
      // appStatus(4) protocolStatus(1) reserved(3)
      for (size_t i = 0; i < n; ++i, ++r->end_body_got)
        if (r->end_body_got == 4) r->protocol_status = uint8_t(p[i]);
    }
  }
  void on_record_end(const fcgi::Header& h) override {
    if (h.type != fcgi::kEndRequest) return;
    Req* r = h.id ? s.find(h.id) : nullptr;
    if (!r) return;
    static constexpr const char* kWhy[] = {nullptr, "FastCGI CANT_MPX_CONN", "FastCGI OVERLOADED",
                                           "FastCGI UNKNOWN_ROLE"};
    const char* error = r->protocol_status == 0 ? nullptr
                        : r->protocol_status < 4 ? kWhy[r->protocol_status]
                                                 : "FastCGI protocol status not REQUEST_COMPLETE";
    s.finish(*r, error);
  }
};

void FcgiServer::reset(std::string_view client, int fd) {
  on_close();
  client_.assign(client);
  fd_ = fd;
  in_.reset();
  out_.reset();
  dead_ = false;
  next_seq_ = 0;
}

FcgiServer::Req* FcgiServer::find(uint16_t id) {
  for (Req& r : reqs_)
    if (r.id == id) return &r;
  return nullptr;
}

void FcgiServer::begin(uint16_t id) {
  // The same id again before its END_REQUEST: the server gave the old request up (its abort was not seen)
  if (Req* old = find(id)) finish(*old, "FastCGI request id reused before END_REQUEST");
  Req* r = nullptr;
  for (Req& q : reqs_)
    if (q.id == 0) {
      r = &q;
      break;
    }
  if (!r) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  r->id = id;
  r->seq = ++next_seq_;
  r->params_done = r->aborted = r->end_seen = false;
  r->begin_got = 0;
  r->end_body_got = 0;
  r->protocol_status = 0;
  r->nv.reset();
  r->cgi.reset();
  r->vars.clear();
  // Named when its PARAMS are complete; until then (a connection cut in the middle) it is this.
  r->tx = tx::begin("FastCGI request", "http");
  r->tx->client_addr = client_;
  put_attr(r->tx, "protocol", "fastcgi");
  ++open_;
  attr::request_began(r->tx, fd_);
}

void FcgiServer::params_done(Req& r) {
  r.params_done = true;
  if (!r.tx) return;
  r.vars.apply(r.tx);
}

void FcgiServer::finish(Req& r, const char* error) {
  Transaction* t = r.tx;
  r.tx = nullptr;
  r.id = 0;
  if (open_) --open_;
  if (!t) return;
  int status = r.cgi.status();
  char msg[32];
  if (!error && r.aborted) error = "aborted by the web server (FCGI_ABORT_REQUEST)";
  if (!error && status >= 500) {
    std::snprintf(msg, sizeof msg, "HTTP %d", status);
    error = msg;
  }
  tx::end(t, status, error ? error : "");
}

void FcgiServer::give_up() {
  if (!dead_) counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
  dead_ = true;
  for (Req& r : reqs_)
    if (r.id) finish(r, "FastCGI stream not understood");
}

bool FcgiServer::on_read(const char* p, size_t n) {
  if (dead_) return false;
  ReadSink sink(*this);
  if (!in_.feed(p, n, sink)) give_up();
  return !dead_;
}

bool FcgiServer::on_write(const char* p, size_t n) {
  if (dead_) return false;
  WriteSink sink(*this);
  if (!out_.feed(p, n, sink)) give_up();
  return !dead_;
}

void FcgiServer::on_close() {
  for (Req& r : reqs_)
    if (r.id) finish(r, "connection closed before END_REQUEST");
  open_ = 0;
}

void FcgiServer::forget() {
  for (Req& r : reqs_) {
    r.id = 0;
    r.tx = nullptr;
  }
  open_ = 0;
}

Transaction* FcgiServer::request(uint64_t txid) const {
  const Req* best = nullptr;
  for (const Req& r : reqs_) {
    if (!r.id || !r.tx) continue;
    if (txid) {
      if (r.tx->txid == txid) return r.tx;
    } else if (!best || r.seq > best->seq) {
      best = &r;
    }
  }
  return best ? best->tx : nullptr;
}

}  // namespace txray
