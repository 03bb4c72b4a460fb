#include "protocols/http1/http_client.h"

#include <algorithm>
#include <cstring>

#include "protocols/tracecontext/traceparent.h"

namespace txray {
namespace {

constexpr std::string_view kMethods[] = {"GET",     "POST",    "PUT",   "DELETE", "HEAD",
                                         "OPTIONS", "PATCH",   "CONNECT", "TRACE"};

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

// Splits "Name: value" into trimmed name and value; false for a line without ':'.
bool split_header(std::string_view line, std::string_view& name, std::string_view& value) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  name = trim(line.substr(0, colon));
  value = trim(line.substr(colon + 1));
  return true;
}

bool parse_u64(std::string_view v, uint64_t& out) {
  if (v.empty() || v.size() > 18) return false;
  uint64_t x = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  out = x;
  return true;
}

// Transfer-Encoding whose last coding is "chunked".
bool is_chunked(std::string_view v) {
  size_t comma = v.rfind(',');
  if (comma != std::string_view::npos) v = trim(v.substr(comma + 1));
  return iequals(v, "chunked");
}

// A comma-separated list (Upgrade, Connection) that names `token`.
bool has_token(std::string_view v, std::string_view token) {
  while (!v.empty()) {
    size_t comma = v.find(',');
    if (iequals(trim(v.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return false;
}

// "… HTTP/1.0" or "… HTTP/1.1" at the end of a request line (without its line end).
bool ends_with_http1(std::string_view line) {
  line = trim(line);
  if (line.size() < 9) return false;
  std::string_view v = line.substr(line.size() - 9);
  return v == " HTTP/1.1" || v == " HTTP/1.0";
}

// A whole request line "METHOD SP target SP HTTP/1.x" (without its line end): what the tracker follows,
// and so the only line after which a header is inserted.
bool is_request_line(std::string_view line) {
  line = trim(line);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  return sp1 != std::string_view::npos && sp2 > sp1 && ends_with_http1(line);
}

// Which trace headers the header lines at the start of p (up to the blank line) hold: bit 0
// traceparent, bit 1 tracestate, bit 2 baggage.
unsigned head_trace_headers(const char* p, size_t n) {
  unsigned m = 0;
  size_t i = 0;
  while (i < n) {
    const char* nl = static_cast<const char*>(std::memchr(p + i, '\n', n - i));
    size_t end = nl ? static_cast<size_t>(nl - p) : n;
    std::string_view line(p + i, end - i);
    if (trim(line).empty() && nl) break;  // blank line: the head ended
    std::string_view name, value;
    if (split_header(line, name, value)) {
      if (iequals(name, "traceparent")) m |= 1;
      else if (iequals(name, "tracestate")) m |= 2;
      else if (iequals(name, "baggage")) m |= 4;
    }
    i = end + 1;
  }
  return m;
}

}  // namespace

bool looks_like_http_request(const char* buf, size_t n) {
  for (std::string_view m : kMethods) {
    size_t k = std::min(n, m.size() + 1);
    if (k == 0) return true;
    if (std::memcmp(buf, m.data(), std::min(k, m.size())) == 0 && (k <= m.size() || buf[m.size()] == ' '))
      return true;
  }
  return false;
}

void HttpClientTracker::collect(std::string& line, const char* p, size_t n) {
  if (line.size() < kMaxLine) line.append(p, std::min(n, kMaxLine - line.size()));
}

size_t HttpClientTracker::insert_point(const char* buf, size_t n, unsigned* own) const {
  if (own) *own = 0;
  if (opaque_ || n == 0) return kNoInsert;
  if (req_ == Req::kIdle) {
    if (count_ == kMaxOutstanding || !looks_like_http_request(buf, n)) return kNoInsert;
  } else if (req_ != Req::kLine) {
    return kNoInsert;
  }
  const char* nl = static_cast<const char*>(std::memchr(buf, '\n', n));
  if (!nl) return kNoInsert;
  size_t at = static_cast<size_t>(nl - buf) + 1;
  // The request line must really be HTTP/1.x ("GET key\r\n" is a Redis inline command).
  std::string_view line(buf, at - 1);
  // The same test the tracker makes of the line it collects (cut at kMaxLine): a header is inserted only
  // into a request the tracker follows (agent.fuzz_http_outbound found "GET HTTP/1.1" and 5,000-byte
  // lines taken here and given up there).
  if (req_ == Req::kLine) {
    if (req_line_.size() + line.size() > kMaxLine) return kNoInsert;
    std::string whole = req_line_;
    whole.append(line);
    if (!is_request_line(whole)) return kNoInsert;
  } else if (line.size() > kMaxLine || !is_request_line(line)) {
    return kNoInsert;
  }
  unsigned m = head_trace_headers(buf + at, n - at);
  if (m & 1) return kNoInsert;
  if (own) *own = m >> 1;  // the program's own tracestate / baggage: not sent twice
  return at;
}

// ---------------------------------------------------------------------------------------------------
// Chunked bodies: "<hex size>[;ext]\r\n<data>\r\n" … "0\r\n" [trailer lines] "\r\n".

size_t HttpClientTracker::ChunkState::feed(const char* p, size_t n, bool& done) {
  done = false;
  size_t i = 0;
  while (i < n) {
    switch (phase) {
      case Chunk::kSize: {
        char c = p[i++];
        if (c == '\n') {
          if (!size_digits) size_bad = true;
          phase = remaining ? Chunk::kData : Chunk::kTrailer;
          size_digits = size_ext = line_nonempty = false;
        } else if (!size_ext) {
          int v = (c >= '0' && c <= '9') ? c - '0' : (lower(c) >= 'a' && lower(c) <= 'f') ? lower(c) - 'a' + 10 : -1;
          if (v >= 0) {
            if (remaining >> 56) size_bad = true;
            remaining = remaining << 4 | static_cast<uint64_t>(v);
            size_digits = true;
          } else if (c == ';') {
            size_ext = true;
          } else if (c != '\r' && c != ' ' && c != '\t') {
            size_bad = true;
          }
        }
        break;
      }
      case Chunk::kData: {
        uint64_t take = std::min<uint64_t>(remaining, n - i);
        i += take;
        remaining -= take;
        if (remaining == 0) phase = Chunk::kDataEnd;
        break;
      }
      case Chunk::kDataEnd:
        if (p[i++] == '\n') phase = Chunk::kSize;
        break;
      case Chunk::kTrailer: {
        char c = p[i++];
        if (c == '\n') {
          if (!line_nonempty) {
            *this = ChunkState{};
            done = true;
            return i;
          }
          line_nonempty = false;
        } else if (c != '\r') {
          line_nonempty = true;
        }
        break;
      }
    }
  }
  return i;
}

// ---------------------------------------------------------------------------------------------------
// Request side.

void HttpClientTracker::on_sent(const char* buf, size_t n, HttpClientSink& sink, uint64_t inserted_span_id) {
  // The insertion went into the request whose request line ends in this write: the first head to
  // complete from here on.
  if (inserted_span_id) inserted_span_ = inserted_span_id;
  size_t i = 0;
  while (i < n && !opaque_) i += sent_request(buf + i, n - i, sink);
}

size_t HttpClientTracker::sent_request(const char* p, size_t n, HttpClientSink& sink) {
  switch (req_) {
    case Req::kIdle:
      if (count_ == kMaxOutstanding) {
        give_up(sink, "too many pipelined requests");
        return n;
      }
      if (!looks_like_http_request(p, n)) {
        give_up(sink, "not HTTP");
        return n;
      }
      req_ = Req::kLine;
      req_line_.clear();
      method_.clear();
      target_.clear();
      host_.clear();
      program_span_ = 0;
      req_upgrade_h2c_ = false;
      req_bytes_ = 0;
      req_body_left_ = 0;
      req_chunked_ = false;
      return 0;
    case Req::kLine:
    case Req::kHeaders: {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      size_t take = nl ? static_cast<size_t>(nl - p) + 1 : n;
      collect(req_line_, p, nl ? take - 1 : take);
      req_bytes_ += take;
      if (!nl) return take;
      if (req_ == Req::kLine) {
        request_line(sink);
      } else if (trim(req_line_).empty()) {
        request_head_done(sink);
      } else {
        std::string_view name, value;
        if (split_header(req_line_, name, value)) {
          if (iequals(name, "host")) {
            host_.assign(value);
          } else if (iequals(name, "content-length")) {
            parse_u64(value, req_body_left_);
          } else if (iequals(name, "transfer-encoding")) {
            req_chunked_ = is_chunked(value);
          } else if (iequals(name, "upgrade")) {
            req_upgrade_h2c_ = has_token(value, "h2c");
          } else if (iequals(name, "traceparent") && !program_span_) {
            TraceParent tp;
            if (parse_traceparent(value, tp)) program_span_ = tp.parent_id;
          }
        }
      }
      req_line_.clear();
      return take;
    }
    case Req::kBodyLength: {
      uint64_t take = std::min<uint64_t>(req_body_left_, n);
      req_body_left_ -= take;
      if (HttpCall* c = newest()) c->request_bytes += take;
      if (req_body_left_ == 0) req_ = Req::kIdle;
      return take;
    }
    case Req::kBodyChunked: {
      bool done = false;
      size_t take = req_chunk_.feed(p, n, done);
      if (HttpCall* c = newest()) c->request_bytes += take;
      if (req_chunk_.size_bad) give_up(sink, "malformed chunked request body");
      if (done) req_ = Req::kIdle;
      return take;
    }
  }
  return n;
}

void HttpClientTracker::on_sent_opaque(uint64_t n, HttpClientSink& sink) {
  if (opaque_ || n == 0) return;
  if (req_ == Req::kBodyLength && n <= req_body_left_) {
    req_body_left_ -= n;
    if (HttpCall* c = newest()) c->request_bytes += n;
    if (req_body_left_ == 0) req_ = Req::kIdle;
    return;
  }
  give_up(sink, "request bytes not visible to the agent (sendfile)");
}

void HttpClientTracker::request_line(HttpClientSink& sink) {
  std::string_view line = trim(req_line_);
  if (!is_request_line(line)) {
    give_up(sink, "not HTTP/1.x");
    return;
  }
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  method_.assign(line.substr(0, sp1));
  target_.assign(trim(line.substr(sp1 + 1, sp2 - sp1 - 1)));
  req_ = Req::kHeaders;
}

void HttpClientTracker::request_head_done(HttpClientSink& sink) {
  HttpCall& c = calls_[(head_ + count_) % kMaxOutstanding];
  c = HttpCall{};
  ++count_;
  c.request_bytes = req_bytes_;
  c.head_method = method_ == "HEAD";
  c.connect_method = method_ == "CONNECT";
  c.upgrade_h2c = req_upgrade_h2c_;
  // Our own header wins: that is the id the callee sees first.
  c.span_id = inserted_span_ ? inserted_span_ : program_span_;
  inserted_span_ = 0;
  HttpRequestHead h{method_, target_, host_, program_span_};
  sink.on_request(c, h);
  if (req_chunked_) {
    req_chunk_ = ChunkState{};
    req_ = Req::kBodyChunked;
  } else if (req_body_left_ > 0) {
    req_ = Req::kBodyLength;
  } else {
    req_ = Req::kIdle;
  }
}

// ---------------------------------------------------------------------------------------------------
// Response side.

size_t HttpClientTracker::on_received(const char* buf, size_t n, HttpClientSink& sink) {
  size_t i = 0;
  while (i < n && !opaque_ && count_ > 0) i += received_response(buf + i, n - i, sink);
  // Bytes with no request outstanding (a server talking first, or after a tunnel) are not ours.
  return upgraded_ ? i : n;
}

bool HttpClientTracker::take_upgraded(HttpCall* out) {
  if (!upgraded_) return false;
  upgraded_ = false;
  *out = upgraded_call_;
  upgraded_call_ = HttpCall{};
  return true;
}

size_t HttpClientTracker::received_response(const char* p, size_t n, HttpClientSink& sink) {
  HttpCall& c = *oldest();
  if (!c.first_byte_seen) {
    c.first_byte_seen = true;
    sink.on_first_byte(c);
  }
  switch (resp_) {
    case Resp::kStatus:
    case Resp::kHeaders: {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      size_t take = nl ? static_cast<size_t>(nl - p) + 1 : n;
      collect(resp_line_, p, nl ? take - 1 : take);
      c.response_bytes += take;
      if (!nl) return take;
      if (resp_ == Resp::kStatus) {
        response_line(sink);
      } else if (trim(resp_line_).empty()) {
        response_head_done(sink);
      } else {
        std::string_view name, value;
        if (split_header(resp_line_, name, value)) {
          if (iequals(name, "content-length")) {
            resp_has_length_ = parse_u64(value, resp_body_left_);
          } else if (iequals(name, "transfer-encoding")) {
            resp_chunked_ = is_chunked(value);
          }
        }
      }
      resp_line_.clear();
      return take;
    }
    case Resp::kBodyLength: {
      uint64_t take = std::min<uint64_t>(resp_body_left_, n);
      resp_body_left_ -= take;
      c.response_bytes += take;
      if (resp_body_left_ == 0) finish_oldest(sink, {});
      return take;
    }
    case Resp::kBodyChunked: {
      bool done = false;
      size_t take = resp_chunk_.feed(p, n, done);
      c.response_bytes += take;
      if (resp_chunk_.size_bad) {
        give_up(sink, "malformed chunked response");
      } else if (done) {
        finish_oldest(sink, {});
      }
      return take;
    }
    case Resp::kBodyToEof:
      c.response_bytes += n;
      return n;
  }
  return n;
}

void HttpClientTracker::response_line(HttpClientSink& sink) {
  std::string_view line = trim(resp_line_);
  // "HTTP/1.1 200 OK"
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ' ||
      !(line.size() == 12 || line[12] == ' ')) {
    give_up(sink, "malformed response status line");
    return;
  }
  int s = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') {
      give_up(sink, "malformed response status line");
      return;
    }
    s = s * 10 + (line[i] - '0');
  }
  resp_status_ = s;
  resp_chunked_ = resp_has_length_ = false;
  resp_body_left_ = 0;
  resp_ = Resp::kHeaders;
}

void HttpClientTracker::response_head_done(HttpClientSink& sink) {
  HttpCall& c = *oldest();
  int s = resp_status_;
  if (s >= 100 && s < 200 && s != 101) {  // interim (100 Continue, 103 Early Hints): the final one follows
    resp_ = Resp::kStatus;
    return;
  }
  c.status = s;
  if (s == 101 && c.upgrade_h2c && count_ == 1) {
    // HTTP/2 from the next byte on: the call goes on as stream 1 (take_upgraded), not ended here.
    upgraded_call_ = c;
    upgraded_call_.status = 0;  // stream 1's :status will say
    c = HttpCall{};
    head_ = (head_ + 1) % kMaxOutstanding;
    count_ = 0;
    upgraded_ = true;
    resp_ = Resp::kStatus;
    give_up(sink, "connection upgraded");  // nothing is left to end: just makes the tracker opaque
    return;
  }
  if (s == 101 || (c.connect_method && s >= 200 && s < 300)) {
    finish_oldest(sink, {});
    give_up(sink, "connection upgraded");  // whatever follows is not HTTP/1.x
    return;
  }
  if (c.head_method || s == 204 || s == 304 || (s >= 100 && s < 200)) {
    finish_oldest(sink, {});
  } else if (resp_chunked_) {
    resp_chunk_ = ChunkState{};
    resp_ = Resp::kBodyChunked;
  } else if (resp_has_length_) {
    if (resp_body_left_ == 0) {
      finish_oldest(sink, {});
    } else {
      resp_ = Resp::kBodyLength;
    }
  } else {
    resp_ = Resp::kBodyToEof;
  }
}

void HttpClientTracker::finish_oldest(HttpClientSink& sink, std::string_view error) {
  HttpCall& c = *oldest();
  if (c.status == 0 && resp_ != Resp::kStatus) c.status = resp_status_;
  sink.on_response(c, error);
  c = HttpCall{};
  head_ = (head_ + 1) % kMaxOutstanding;
  --count_;
  resp_ = Resp::kStatus;
  resp_line_.clear();
  resp_status_ = 0;
}

// Loops over outstanding calls are bounded by kMaxOutstanding: a connection used by two threads at once
// (not expected of HTTP/1.x clients) may leave count_ inconsistent; it must still never loop for long.
void HttpClientTracker::on_end(HttpClientSink& sink, std::string_view error) {
  if (count_ > 0 && resp_ == Resp::kBodyToEof) finish_oldest(sink, error);
  for (size_t i = 0; i < kMaxOutstanding && count_ > 0; ++i)
    finish_oldest(sink, error.empty() ? std::string_view("connection closed before the response ended") : error);
  count_ = 0;
  req_ = Req::kIdle;
  req_line_.clear();
}

void HttpClientTracker::give_up(HttpClientSink& sink, std::string_view error) {
  for (size_t i = 0; i < kMaxOutstanding && count_ > 0; ++i) finish_oldest(sink, error);
  count_ = 0;
  opaque_ = true;
  req_line_.clear();
  req_line_.shrink_to_fit();
  resp_line_.clear();
  resp_line_.shrink_to_fit();
}

// ---------------------------------------------------------------------------------------------------

std::string http_call_url(std::string_view scheme, std::string_view host, std::string_view target,
                          std::string_view fallback_host, const redact::Policy& p) {
  std::string url;
  size_t hash = target.find('#');
  if (hash != std::string_view::npos) target = target.substr(0, hash);
  // absolute-form ("http://h/p"), or any URL with a scheme such as curl's effective URL
  size_t sep = target.find("://");
  bool absolute = !target.empty() && target[0] != '/' && sep != std::string_view::npos &&
                  target.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.") == sep;
  std::string_view path = target;
  // authority-form, what CONNECT writes ("example.com:443"): the target names the place, with no path
  bool authority = !absolute && !target.empty() && target[0] != '/' &&
                   target.find_first_of("/?") == std::string_view::npos && target.find(':') != std::string_view::npos;
  if (authority) {
    url.append(scheme).append("://").append(target);
    return url;
  }
  if (absolute) {
    // the authority ends at the path or, with no path, at the query ("http://h?token=x")
    size_t start = target.find("//") + 2;
    size_t slash = target.find_first_of("/?", start);
    if (slash == std::string_view::npos) slash = target.size();
    url.append(target.substr(0, start));
    redact::append_authority(p, target.substr(start, slash - start), url);  // "user:pass@host"
    path = target.substr(slash);
  } else {
    url.append(scheme).append("://").append(host.empty() ? fallback_host : host);
  }
  size_t q = path.find('?');
  redact::append_path(p, path.substr(0, q), url);
  if (q != std::string_view::npos) {
    url.push_back('?');
    redact::append_query(p, path.substr(q + 1), url);
  }
  return url;
}

}  // namespace txray
