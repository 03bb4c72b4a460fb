#include "protocols/fastcgi/fastcgi_client.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/counters.h"
#include "core/recorder.h"
#include "core/redact.h"
#include "core/transaction.h"
#include "protocols/fastcgi/cgi_vars.h"
#include "protocols/fastcgi/fastcgi_records.h"
#include "protocols/fastcgi/splice.h"
#include "protocols/tracecontext/context.h"
#include "protocols/tracecontext/traceparent.h"

namespace txray::fcgi {
namespace {

int g_propagate = -1;

bool propagate() {
  if (g_propagate < 0) {
    const char* v = getenv("TXRAY_PROPAGATE");
    g_propagate = !(v && (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "no")));
  }
  return g_propagate != 0;
}

// The PARAMS record the client inserts: HTTP_TRACEPARENT, then HTTP_TRACESTATE and HTTP_BAGGAGE when
// the transaction has them and they fit. Returns its length (0: none).
size_t context_record(uint16_t id, const OutboundContext& c, uint64_t span, char* out, size_t cap) {
  char tp[kTraceParentLen];
  format_traceparent(c.trace_id, span, c.flags, tp);
  std::string body;
  append_pair(body, "HTTP_TRACEPARENT", std::string_view(tp, kTraceParentLen));
  if (!c.tracestate.empty() && kHeaderLen + body.size() + pair_len(15, c.tracestate.size()) <= cap)
    append_pair(body, "HTTP_TRACESTATE", c.tracestate);
  if (!c.baggage.empty() && kHeaderLen + body.size() + pair_len(12, c.baggage.size()) <= cap)
    append_pair(body, "HTTP_BAGGAGE", c.baggage);
  if (kHeaderLen + body.size() > cap) return 0;
  put_header(out, kParams, id, uint16_t(body.size()), 0);
  std::memcpy(out + kHeaderLen, body.data(), body.size());
  return kHeaderLen + body.size();
}

class FcgiClient final : public WireClient {
 public:
  static constexpr size_t kMaxCalls = 16;
  explicit FcgiClient(const WireEnv& env) : env_(env) {}

  void on_sent(const char* p, size_t n) override {
    if (stopped_) return;
    SentSink sink{*this};
    if (!out_.feed(p, n, sink)) stop();
  }
  void on_received(const char* p, size_t n) override {
    if (stopped_) return;
    ReceivedSink sink{*this};
    if (!in_.feed(p, n, sink)) stop();
  }
  void on_end(std::string_view why) override {
    for (Call& c : calls_)
      if (c.id) close(c, why.empty() ? std::string_view("connection closed before END_REQUEST") : why);
    planned_ = 0;
  }
  // Given up with part of an inserted record still to send: the connection stays the client's until
  // those bytes went out (the next write sends them first), or the server would read a record cut short.
  bool stopped() const override { return stopped_ && !splice_.has_pending(); }
  // A request body nginx sends with sendfile() (over 16 KiB with Debian's `sendfile on`): STDIN content
  // that is only counted. Inserted bytes still pending would have to go before it: then it cannot be.
  bool on_sent_opaque(uint64_t n) override {
    if (stopped_ || splice_.has_pending() || n > SIZE_MAX) return false;
    SentSink sink{*this};
    return out_.skip(static_cast<size_t>(n), sink);
  }
  int plan_write(const iovec* iov, int cnt, iovec* out) override;
  size_t commit_write(size_t accepted) override;

 private:
  struct Call {
    uint16_t id = 0;  // 0: free
    StepRef row;
    uint64_t span = 0;
    bool params_started = false;
    bool injected = false;
    bool first_byte = false;
    uint64_t written = 0, read = 0;
    NameValueReader nv;
    CgiVars vars;
    CgiStatus cgi;
  };
  struct Planned {
    uint16_t id;
    uint64_t span;
  };

  Call* find(uint16_t id) {
    for (Call& c : calls_)
      if (c.id == id) return &c;
    return nullptr;
  }
  uint64_t take_planned_span(uint16_t id) {
    for (size_t i = 0; i < noted_; ++i)
      if (noted_spans_[i].id == id) {
        uint64_t s = noted_spans_[i].span;
        noted_spans_[i] = noted_spans_[--noted_];
        return s;
      }
    return 0;
  }

  void begin(uint16_t id) {
    if (Call* old = find(id)) close(*old, "FastCGI request id reused before END_REQUEST");
    Call* c = nullptr;
    for (Call& q : calls_)
      if (!q.id) {
        c = &q;
        break;
      }
    if (!c) {
      counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    c->id = id;
    c->params_started = c->first_byte = false;
    c->written = c->read = 0;
    c->nv.reset();
    c->vars.clear();
    c->cgi.reset();
    c->span = take_planned_span(id);
    c->injected = c->span != 0;
    c->row = StepRef{};
    ReqRef none;
    Transaction* tx = wire::statement_tx(env_.owner ? *env_.owner : none);
    if (!tx) return;
    c->row = rec::open(tx, StepKind::HTTP_CALL);
    if (!c->span) c->span = rec::new_id();  // not propagated: still an id for the row
    rec::set_id(c->row, c->span);
    rec::add_attr(c->row, "protocol", "fastcgi");
  }

  void params_done(Call& c) {
    if (!rec::usable(c.row)) return;
    std::string url = "fastcgi://";
    url.append(env_.peer);
    std::string_view target = c.vars.uri;
    std::string path;
    if (target.empty()) {
      path = c.vars.script + c.vars.path_info;
      if (!c.vars.query.empty()) path += "?" + c.vars.query;
      target = path;
    }
    url.append(target.substr(0, 2048));
    std::string masked;
    redact::append_url(redact::policy(), url, masked);
    rec::set_text(c.row, masked);
    if (!c.vars.method.empty()) rec::add_attr(c.row, "method", c.vars.method);
  }

  void close(Call& c, std::string_view error) {
    c.id = 0;
    if (!rec::usable(c.row)) return;
    rec::set_status(c.row, c.cgi.status());
    rec::add_bytes(c.row, c.read, c.written);
    std::string err(error);
    if (err.empty() && c.cgi.status() >= 500) err = "HTTP " + std::to_string(c.cgi.status());
    if (!err.empty()) rec::set_error(c.row, err);
    uint64_t elapsed = rec::close(c.row);
    rec::add_totals(c.row.tx, {.call_ns = elapsed, .call_count = 1});
    c.row = StepRef{};
  }

  void stop() {
    if (!stopped_) counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
    stopped_ = true;
    on_end("FastCGI stream not understood");
    splice_.begin();  // nothing more is inserted; what is pending still goes out
  }

  struct SentSink final : RecordReader::Sink, NameValueReader::Sink {
    FcgiClient& cl;
    Call* cur = nullptr;
    explicit SentSink(FcgiClient& c) : cl(c) {}
    void on_header(const Header& h) override {
      if (h.type == kBeginRequest && h.id) cl.begin(h.id);
      if (h.type == kParams)
        if (Call* c = cl.find(h.id)) c->params_started = true;
    }
    void on_content(const Header& h, const char* p, size_t n) override {
      Call* c = h.id ? cl.find(h.id) : nullptr;
      if (!c) return;
      if (h.type == kParams) {
        cur = c;
        c->nv.feed(p, n, *this);
        cur = nullptr;
      } else if (h.type == kStdin) {
        c->written += n;
      }
    }
    void on_skipped(const Header& h, size_t n) override {
      if (Call* c = h.id && h.type == kStdin ? cl.find(h.id) : nullptr) c->written += n;
    }
    void on_record_end(const Header& h) override {
      if (h.type == kParams && h.content == 0)
        if (Call* c = cl.find(h.id)) cl.params_done(*c);
    }
    bool wanted(std::string_view name) override { return CgiVars::wanted(name); }
    void on_pair(std::string_view name, std::string_view value, bool truncated) override {
      cur->vars.take(name, value, truncated);
    }
  };

  struct ReceivedSink final : RecordReader::Sink {
    FcgiClient& cl;
    uint8_t status_byte = 0;
    explicit ReceivedSink(FcgiClient& c) : cl(c) {}
    void on_header(const Header& h) override {
      Call* c = h.id ? cl.find(h.id) : nullptr;
      if (c && h.type == kEndRequest) cl.end_got_ = 0, cl.end_status_ = 0;
    }
    void on_content(const Header& h, const char* p, size_t n) override {
      Call* c = h.id ? cl.find(h.id) : nullptr;
      if (!c) return;
      if (h.type == kStdout) {
        if (!c->first_byte && rec::usable(c->row)) {
          char v[24];
          std::snprintf(v, sizeof v, "%llu",
                        static_cast<unsigned long long>((rec::now_ns() - c->row.start_mono_ns) / 1000));
          rec::add_attr(c->row, "ttfb_us", v);
        }
        c->first_byte = true;
        c->read += n;
        c->cgi.feed(p, n);
      } else if (h.type == kEndRequest) {
        for (size_t i = 0; i < n; ++i, ++cl.end_got_)
          if (cl.end_got_ == 4) cl.end_status_ = uint8_t(p[i]);
      }
    }
    void on_record_end(const Header& h) override {
      if (h.type != kEndRequest) return;
      Call* c = h.id ? cl.find(h.id) : nullptr;
      if (!c) return;
      static constexpr const char* kWhy[] = {"", "FastCGI CANT_MPX_CONN", "FastCGI OVERLOADED",
                                             "FastCGI UNKNOWN_ROLE"};
      cl.close(*c, cl.end_status_ < 4 ? kWhy[cl.end_status_] : "FastCGI protocol status not REQUEST_COMPLETE");
    }
  };

  // What plan_write finds in the write: where each request's first PARAMS record begins.
  struct PlanSink final : RecordReader::Sink {
    FcgiClient& cl;
    const RecordReader& sim;
    uint64_t base;
    struct Spot {
      uint16_t id;
      size_t at;
    } spots[Splicer::kMaxEdits];
    size_t n = 0;
    uint16_t begun[Splicer::kMaxEdits];
    size_t nbegun = 0;
    size_t free_calls = 0;  // call slots a BEGIN_REQUEST of this write can still take
    PlanSink(FcgiClient& c, const RecordReader& r, uint64_t b) : cl(c), sim(r), base(b) {
      for (const Call& q : cl.calls_) free_calls += q.id == 0;
    }
    bool begun_here(uint16_t id) const {
      for (size_t i = 0; i < nbegun; ++i)
        if (begun[i] == id) return true;
      return false;
    }
    void on_header(const Header& h) override {
      // A request that will find no call slot gets no row, so no context either: the application would
      // name a parent span that no row of the caller has.
      if (h.type == kBeginRequest && h.id && nbegun < Splicer::kMaxEdits && !begun_here(h.id)) {
        bool has = cl.find(h.id) != nullptr;  // an id reused takes its own slot again
        if (has || free_calls) {
          free_calls -= has ? 0 : 1;
          begun[nbegun++] = h.id;
        }
      }
      if (h.type != kParams || n >= Splicer::kMaxEdits) return;
      for (size_t i = 0; i < n; ++i)
        if (spots[i].id == h.id) return;  // not its first PARAMS record
      bool fresh = begun_here(h.id);
      if (!fresh) {
        const Call* c = cl.find(h.id);
        if (!c || c->params_started || c->injected) return;
      }
      if (sim.offset() < base + kHeaderLen) return;  // its header began in an earlier write
      spots[n++] = {h.id, size_t(sim.offset() - kHeaderLen - base)};
    }
    void on_content(const Header&, const char*, size_t) override {}
    void on_record_end(const Header&) override {}
  };

  WireEnv env_;
  RecordReader out_, in_;
  Call calls_[kMaxCalls];
  bool stopped_ = false;
  uint32_t end_got_ = 0;
  uint8_t end_status_ = 0;
  Splicer splice_;
  Planned planned_spans_[Splicer::kMaxEdits];
  size_t planned_ = 0;
  // Spans committed for requests whose BEGIN_REQUEST the client has not been fed yet.
  Planned noted_spans_[Splicer::kMaxEdits];
  size_t noted_ = 0;
};

int FcgiClient::plan_write(const iovec* iov, int cnt, iovec* out) {
  splice_.begin();
  planned_ = 0;
  if (!stopped_ && propagate()) {
    RecordReader sim = out_;
    PlanSink sink(*this, sim, out_.offset());
    for (int i = 0; i < cnt && !sim.dead(); ++i)
      if (iov[i].iov_len) sim.feed(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len, sink);
    for (size_t i = 0; i < sink.n; ++i) {
      const Call* c = find(sink.spots[i].id);
      Transaction* tx = nullptr;
      if (c && !sink.begun_here(c->id)) {
        tx = rec::usable(c->row) ? c->row.tx : nullptr;
      } else {
        ReqRef owner = env_.owner ? *env_.owner : ReqRef{};  // a copy: the BEGIN_REQUEST consumes the real one
        tx = wire::statement_tx(owner);
      }
      OutboundContext ctx;
      if (!tx || !outbound_context(tx, &ctx)) continue;
      uint64_t span = rec::new_id();
      char rec_bytes[Splicer::kMaxReplace];
      size_t len = context_record(sink.spots[i].id, ctx, span, rec_bytes, sizeof rec_bytes);
      if (!len || !splice_.add(sink.spots[i].at, 0, rec_bytes, len, uint32_t(planned_))) continue;
      planned_spans_[planned_++] = {sink.spots[i].id, span};
    }
  }
  if (splice_.edits() == 0 && !splice_.has_pending()) return 0;
  return splice_.gather(iov, cnt, out);
}

size_t FcgiClient::commit_write(size_t accepted) {
  uint32_t tags[Splicer::kMaxEdits];
  size_t ntags = 0;
  size_t mine = splice_.commit(accepted, tags, &ntags);
  for (size_t i = 0; i < ntags; ++i) {
    const Planned& p = planned_spans_[tags[i]];
    if (Call* c = find(p.id); c && !c->params_started) {
      c->injected = true;
      c->span = p.span;
      rec::set_id(c->row, p.span);
    } else if (noted_ < Splicer::kMaxEdits) {
      noted_spans_[noted_++] = p;
    }
  }
  splice_.begin();
  planned_ = 0;
  return mine;
}

}  // namespace

bool looks_like_request(const char* p, size_t n) {
  // a first write of the header alone is taken too (0: its role is not in it)
  if (n < kHeaderLen || uint8_t(p[1]) != kBeginRequest || looks_like_begin(p, n) < 0) return false;
  for (size_t i = 11; i < 16 && i < n; ++i)
    if (p[i] != 0) return false;  // the body's reserved bytes
  return n < 11 || uint8_t(p[10]) <= kKeepConn;
}

WireClient* make_client(const WireEnv& env) { return new (std::nothrow) FcgiClient(env); }

void set_propagate_for_test(int on) { g_propagate = on; }

}  // namespace txray::fcgi
