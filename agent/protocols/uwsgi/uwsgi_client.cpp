#include "protocols/uwsgi/uwsgi_client.h"

#include <atomic>
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
#include "protocols/fastcgi/splice.h"
#include "protocols/http1/http_parse.h"
#include "protocols/tracecontext/context.h"
#include "protocols/tracecontext/traceparent.h"
#include "protocols/uwsgi/uwsgi_packet.h"

namespace txray::uwsgi {
namespace {

int g_propagate = -1;
std::atomic<uint64_t> g_not_sent{0};

bool propagate() {
  if (g_propagate < 0) {
    const char* v = getenv("TXRAY_PROPAGATE");
    g_propagate = !(v && (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "no")));
  }
  return g_propagate != 0;
}

constexpr size_t kMaxDatasize = 0xffff;
constexpr size_t kTraceparentVar = 2 + 16 + 2 + kTraceParentLen;  // HTTP_TRACEPARENT's var

size_t var_len(size_t key, size_t value) { return 4 + key + value; }

// The replacement of a packet's header: the header with its datasize grown, then HTTP_TRACEPARENT and,
// when they fit both the splice and the 16-bit datasize, HTTP_TRACESTATE and HTTP_BAGGAGE. Returns its
// length; 0 when not even the traceparent fits the datasize.
size_t context_vars(const char hdr[kHeaderLen], const OutboundContext& c, uint64_t span, char* out, size_t cap) {
  uint16_t datasize = uint16_t(uint8_t(hdr[1]) | uint8_t(hdr[2]) << 8);
  char tp[kTraceParentLen];
  format_traceparent(c.trace_id, span, c.flags, tp);
  std::string vars;
  append_var(vars, "HTTP_TRACEPARENT", std::string_view(tp, kTraceParentLen));
  auto fits = [&](size_t more) {
    return kHeaderLen + vars.size() + more <= cap && datasize + vars.size() + more <= kMaxDatasize;
  };
  if (!fits(0)) return 0;
  if (!c.tracestate.empty() && fits(var_len(15, c.tracestate.size()))) append_var(vars, "HTTP_TRACESTATE", c.tracestate);
  if (!c.baggage.empty() && fits(var_len(12, c.baggage.size()))) append_var(vars, "HTTP_BAGGAGE", c.baggage);
  size_t grown = datasize + vars.size();
  out[0] = hdr[0];
  out[1] = char(grown & 0xff);
  out[2] = char(grown >> 8);
  out[3] = hdr[3];
  std::memcpy(out + kHeaderLen, vars.data(), vars.size());
  return kHeaderLen + vars.size();
}

bool cgi_key_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'; }

// Whether the write begins with a whole packet header and vars block that parse, every key (up to
// VarsReader::kMaxKey long) of CGI-variable characters. Only such a write gets the context: the bytes the
// client rewrites are then surely a uwsgi packet's header, however the connection was recognised.
bool whole_vars(const iovec* iov, int cnt) {
  struct Keys final : VarsReader::Sink {
    bool bad = false;
    bool wanted(std::string_view key) override {
      for (char c : key) bad |= !cgi_key_char(c);
      return false;
    }
    void on_var(std::string_view, std::string_view, bool) override {}
  } keys;
  VarsReader sim;
  for (int i = 0; i < cnt && !sim.done() && !sim.dead() && !keys.bad; ++i)
    if (iov[i].iov_len) sim.feed(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len, keys);
  return sim.done() && !keys.bad;
}

class UwsgiClient final : public WireClient {
 public:
  explicit UwsgiClient(const WireEnv& env) : env_(env) {}

  void on_sent(const char* p, size_t n) override;
  void on_received(const char* p, size_t n) override;
  void on_end(std::string_view why) override {
    if (rec::usable(row_) || phase_ != Phase::idle) {
      if (resp_.until_close() || answered_) close({});
      else close(why.empty() ? std::string_view("connection closed before the response ended") : why);
    }
    phase_ = Phase::idle;
    answered_ = drain_ = false;
  }
  bool stopped() const override { return stopped_; }
  // nginx sends a request body it buffered in a file with sendfile (`sendfile on`, Debian's default):
  // body bytes are only counted, so the stream is followed on; anything else is not.
  bool on_sent_opaque(uint64_t n) override {
    if (stopping_ || phase_ != Phase::body || n > body_left_) return false;
    body_left_ -= n;
    written_ += n;
    if (body_left_ == 0) phase_ = answered_ ? Phase::idle : Phase::sent;
    if (phase_ == Phase::idle) answered_ = false;
    return true;
  }
  int plan_write(const iovec* iov, int cnt, iovec* out) override;
  size_t commit_write(size_t accepted) override;

 private:
  // idle: between packets; vars: the header and vars going out; body: CONTENT_LENGTH bytes going out;
  // sent: the whole request went out, its answer is awaited (or being read).
  enum class Phase : uint8_t { idle, vars, body, sent };

  struct Vars final : VarsReader::Sink {
    CgiVars& v;
    explicit Vars(CgiVars& vars) : v(vars) {}
    bool wanted(std::string_view key) override { return CgiVars::wanted(key); }
    void on_var(std::string_view key, std::string_view value, bool truncated) override { v.take(key, value, truncated); }
  };

  void begin() {
    phase_ = Phase::vars;
    vars_.reset();
    cgi_.clear();
    answered_ = first_byte_ = drain_ = false;
    written_ = read_ = 0;
    resp_.reset(false);
    row_ = StepRef{};
    uint64_t span = noted_span_;
    noted_span_ = 0;
    injected_ = span != 0;
    header_seen_ = false;
    ReqRef none;
    Transaction* tx = wire::statement_tx(env_.owner ? *env_.owner : none);
    if (!tx) return;
    row_ = rec::open(tx, StepKind::HTTP_CALL);
    rec::set_id(row_, span ? span : rec::new_id());  // not propagated: still an id for the row
    rec::add_attr(row_, "protocol", "uwsgi");
  }

  // The packet's header is known: a packet that went without the context because the context would
  // not fit its datasize is counted, and its row says so. Decided from the packet alone, not from
  // where the program's writes began (the insertion is only made at a write's start).
  void header_known() {
    header_seen_ = true;
    if (injected_ || vars_.modifier1() != 0 || !propagate() || !rec::usable(row_)) return;
    OutboundContext ctx;
    if (!outbound_context(row_.tx, &ctx)) return;
    if (size_t(vars_.datasize()) + kTraceparentVar <= kMaxDatasize) return;
    g_not_sent.fetch_add(1, std::memory_order_relaxed);
    rec::add_attr(row_, "propagation", "skipped: the packet's datasize would pass 65535");
  }

  void vars_done() {
    body_left_ = cgi_.content_length;
    phase_ = body_left_ ? Phase::body : Phase::sent;
    resp_.reset(cgi_.method == "HEAD");
    if (!rec::usable(row_)) return;
    std::string url = "uwsgi://";
    url.append(env_.peer);
    std::string_view target = cgi_.uri;
    std::string path;
    if (target.empty()) {
      path = cgi_.script + cgi_.path_info;
      if (!cgi_.query.empty()) path += "?" + cgi_.query;
      target = path;
    }
    url.append(target.substr(0, 2048));
    std::string masked;
    redact::append_url(redact::policy(), url, masked);
    rec::set_text(row_, masked);
    if (!cgi_.method.empty()) rec::add_attr(row_, "method", cgi_.method);
  }

  void close(std::string_view error) {
    if (!rec::usable(row_)) {
      row_ = StepRef{};
      return;
    }
    int status = resp_.status();
    rec::set_status(row_, status);
    rec::add_bytes(row_, read_, written_);
    std::string err(error);
    if (err.empty() && status >= 500) err = "HTTP " + std::to_string(status);
    if (!err.empty()) rec::set_error(row_, err);
    uint64_t elapsed = rec::close(row_);
    rec::add_totals(row_.tx, {.call_ns = elapsed, .call_count = 1});
    row_ = StepRef{};
  }

  // A byte stream not understood: counted, the row closed, nothing more parsed. While inserted bytes
  // are still pending (the kernel took part of the client's vars) the program's packet is not whole on
  // the wire, so stopped() — after which the dispatch lets the client go — waits until they went.
  void stop() {
    if (!stopping_) counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
    stopping_ = true;
    if (rec::usable(row_)) close("uwsgi stream not understood");
    row_ = StepRef{};
    phase_ = Phase::idle;
    if (!splice_.has_pending()) stopped_ = true;
  }

  WireEnv env_;
  Phase phase_ = Phase::idle;
  VarsReader vars_;
  CgiVars cgi_;
  http::ResponseTracker resp_;
  uint64_t body_left_ = 0;
  bool answered_ = false;  // the response ended while the request's body was still going out
  bool first_byte_ = false;
  bool drain_ = false;     // the answer to a HEAD request ended: what follows it is its body
  bool stopping_ = false;  // stop() was called; stopped_ once no inserted byte is pending
  bool stopped_ = false;
  bool injected_ = false;     // the packet going out carries the client's vars
  bool header_seen_ = false;  // header_known() ran for it
  StepRef row_;
  uint64_t written_ = 0, read_ = 0;
  Splicer splice_;
  uint64_t planned_span_ = 0;  // the span of the edit of the last plan
  uint64_t noted_span_ = 0;    // committed for the packet whose header the client has not been fed yet
};

void UwsgiClient::on_sent(const char* p, size_t n) {
  if (stopping_) return;
  while (n > 0 && !stopped_) {
    switch (phase_) {
      case Phase::idle:
        begin();
        break;
      case Phase::vars: {
        Vars sink(cgi_);
        size_t used = vars_.feed(p, n, sink);
        p += used;
        n -= used;
        // Before the dead check: a packet whose vars break later is marked alike whether its header
        // came in the same write or an earlier one.
        if (!header_seen_ && vars_.header_done()) header_known();
        if (vars_.dead()) return stop();
        if (vars_.done()) vars_done();
        break;
      }
      case Phase::body: {
        size_t take = body_left_ < n ? size_t(body_left_) : n;
        body_left_ -= take;
        written_ += take;
        p += take;
        n -= take;
        if (body_left_ == 0) phase_ = answered_ ? Phase::idle : Phase::sent;
        if (phase_ == Phase::idle) answered_ = false;
        break;
      }
      case Phase::sent:
        // More than the request before its answer ended: not one packet at a time, not followed.
        return stop();
    }
  }
}

void UwsgiClient::on_received(const char* p, size_t n) {
  if (stopping_ || drain_) return;
  // An answer before the request's vars ended, or after it ended: not uwsgi as the client knows it.
  if ((phase_ != Phase::body && phase_ != Phase::sent) || answered_) return stop();
  if (!first_byte_ && rec::usable(row_)) {
    char v[24];
    std::snprintf(v, sizeof v, "%llu", static_cast<unsigned long long>((rec::now_ns() - row_.start_mono_ns) / 1000));
    rec::add_attr(row_, "ttfb_us", v);
  }
  first_byte_ = true;
  size_t used = resp_.feed(p, n);
  read_ += used;
  if (!resp_.done()) return;
  close({});
  // uWSGI writes the body of a HEAD request's answer all the same (the front drops it): up to the
  // connection's end, which is where uWSGI ends every answer, it is not another answer.
  drain_ = cgi_.method == "HEAD";
  if (phase_ == Phase::sent) phase_ = Phase::idle;
  else answered_ = true;  // the rest of the body still goes out, then the next packet
  if (used < n && !drain_) stop();  // bytes after the answer
}

int UwsgiClient::plan_write(const iovec* iov, int cnt, iovec* out) {
  splice_.begin();
  planned_span_ = 0;
  if (!stopping_ && phase_ == Phase::idle && !noted_span_ && propagate()) {
    char hdr[kHeaderLen];
    size_t k = 0, total = 0;
    for (int i = 0; i < cnt; ++i) {
      size_t take = iov[i].iov_len < kHeaderLen - k ? iov[i].iov_len : kHeaderLen - k;
      if (take) std::memcpy(hdr + k, iov[i].iov_base, take);
      k += take;
      total += iov[i].iov_len;
    }
    // Only with bytes of the packet after its header in the same write (splice.h): the vars the kernel
    // may leave pending then go out before any of them, and the program, with those bytes still to
    // write, writes again. A header written alone goes as it is; so does one whose vars the write does
    // not hold whole (nginx writes header and vars from one buffer).
    ReqRef owner = env_.owner ? *env_.owner : ReqRef{};  // a copy: the packet's header consumes the real one
    Transaction* tx =
        total > kHeaderLen && hdr[0] == 0 && whole_vars(iov, cnt) ? wire::statement_tx(owner) : nullptr;
    OutboundContext ctx;
    if (tx && outbound_context(tx, &ctx)) {
      uint64_t span = rec::new_id();
      char r[Splicer::kMaxReplace];
      size_t len = context_vars(hdr, ctx, span, r, sizeof r);
      if (len && splice_.add(0, kHeaderLen, r, len, 0)) planned_span_ = span;
    }
  }
  if (splice_.edits() == 0 && !splice_.has_pending()) return 0;
  return splice_.gather(iov, cnt, out);
}

size_t UwsgiClient::commit_write(size_t accepted) {
  uint32_t tags[Splicer::kMaxEdits];
  size_t ntags = 0;
  size_t mine = splice_.commit(accepted, tags, &ntags);
  if (ntags) noted_span_ = planned_span_;
  if (stopping_ && !splice_.has_pending()) stopped_ = true;
  splice_.begin();
  planned_span_ = 0;
  return mine;
}

}  // namespace

bool looks_like_request(const char* p, size_t n) {
  if (n < 7 || looks_like_packet(p, n) != 1) return false;
  size_t datasize = size_t(uint8_t(p[1]) | uint8_t(p[2]) << 8);
  size_t key = size_t(uint8_t(p[4]) | uint8_t(p[5]) << 8);
  size_t i = 6;
  for (; i < 6 + key && i < n; ++i)
    if (!cgi_key_char(p[i])) return false;
  if (i + 2 > n) return true;  // the value's length is past what was seen
  size_t value = size_t(uint8_t(p[i]) | uint8_t(p[i + 1]) << 8);
  return 2 + key + 2 + value <= datasize;
}

WireClient* make_client(const WireEnv& env) { return new (std::nothrow) UwsgiClient(env); }

uint64_t contexts_not_sent() { return g_not_sent.load(std::memory_order_relaxed); }

void set_propagate_for_test(int on) { g_propagate = on; }

}  // namespace txray::uwsgi
