#include "protocols/http1/http_parse.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace txray::http {
namespace {

// 0x20 in each byte of w that is a lowercase ASCII letter (w: ASCII bytes), else 0.
constexpr uint64_t letter_bits(uint64_t w) {
  constexpr uint64_t ones = 0x0101010101010101ull;
  uint64_t ge_a = w + (0x80 - 'a') * ones;  // high bit: byte >= 'a'
  uint64_t gt_z = w + (0x80 - 'z' - 1) * ones;  // high bit: byte > 'z'
  return ((ge_a & ~gt_z) & (0x80 * ones)) >> 2;
}

// a equals lit ignoring ASCII case, lit being lowercase (a header name the parser looks for): eight
// bytes at a time, a letter of lit matching either case of it and any other byte only itself, so exactly
// iequals(a, lit). With lit a literal the masks fold to constants (iequals was ~6 instructions
// a byte on every response head).
__attribute__((always_inline)) inline bool iequals_lower(std::string_view a, std::string_view lit) {
  if (a.size() != lit.size()) return false;
  auto eq8 = [&](size_t i) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, lit.data() + i, 8);
    return (x | letter_bits(y)) == y;
  };
  size_t n = a.size();
  if (n >= 8) {
    // Whole words, then the last eight bytes (overlapping the previous word: each byte's test is its
    // own, so looking at a byte twice changes nothing) instead of a byte loop for the tail.
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
      if (!eq8(i)) return false;
    return i == n || eq8(n - 8);
  }
  if (n >= 4) {
    auto eq4 = [&](size_t i) {
      uint32_t x, y;
      std::memcpy(&x, a.data() + i, 4);
      std::memcpy(&y, lit.data() + i, 4);
      return (x | uint32_t(letter_bits(y))) == y;
    };
    return eq4(0) && eq4(n - 4);
  }
  for (size_t i = 0; i < n; ++i) {
    char l = lit[i];
    char c = (l >= 'a' && l <= 'z') ? char(a[i] | 0x20) : a[i];
    if (c != l) return false;
  }
  return true;
}

__attribute__((always_inline)) inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool contains_token(std::string_view value, std::string_view token) {
  // Comma-separated list, case-insensitive ("Transfer-Encoding: gzip, chunked").
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = trim(value.substr(0, comma));
    if (iequals_lower(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool parse_u64(std::string_view s, int64_t* out) {
  s = trim(s);
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}


// The '\n' bytes of a buffer, in order, found 64 bytes at a time (four compares and masks per 64
// bytes, then one bit per line): a head is looked at in one pass instead of a memchr call per line
// (~90 instructions a line on nginx's ten-line response head).
class Newlines {
 public:
  Newlines(const char* b, size_t n) : b_(b), n_(n) { load(); }
  // The next '\n' (nullptr: no more).
  __attribute__((always_inline)) const char* next() {
    while (mask_ == 0) {
      pos_ += 64;
      if (pos_ >= n_) return nullptr;
      load();
    }
    unsigned i = unsigned(__builtin_ctzll(mask_));
    mask_ &= mask_ - 1;
    return b_ + pos_ + i;
  }

 private:
  static uint64_t mask64(const char* p) {
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n');
    auto m16 = [&](int i) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      return uint64_t(uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl))));
    };
    return m16(0) | m16(16) << 16 | m16(32) << 32 | m16(48) << 48;
#else
    uint64_t m = 0;
    for (unsigned i = 0; i < 64; ++i) m |= uint64_t(p[i] == '\n') << i;
    return m;
#endif
  }
  __attribute__((always_inline)) void load() {
    size_t left = n_ - pos_;
    if (left >= 64) {
      mask_ = mask64(b_ + pos_);
    } else if (n_ >= 64) {
      // The last bytes: the buffer's last 64 (never past its end), without those looked at already.
      mask_ = mask64(b_ + n_ - 64) >> (64 - left);
    } else {  // a buffer shorter than 64 bytes (pos_ is 0; an empty one may have no address)
      char tmp[64] = {};
      if (n_) std::memcpy(tmp, b_, n_);
      mask_ = mask64(tmp);
    }
  }
  const char* b_;
  size_t n_;
  size_t pos_ = 0;
  uint64_t mask_ = 0;
};

// A set of header names' first letters (case-insensitive), so that lines of other headers are skipped
// on their first byte.
constexpr uint32_t letters(const char* names) {
  uint32_t m = 0;
  for (; *names; ++names) m |= 1u << ((*names | 0x20) - 'a');
  return m;
}
inline bool may_match(char c, uint32_t first_letters) {
  unsigned i = unsigned((c | 0x20) - 'a');
  return i >= 26 || (first_letters >> i) & 1;  // not a letter (a space before the name…): looked at
}

// The line [p, e) (spaces and tabs before the name skipped) is header `lit` (lowercase; any case in the
// line): where its value begins, just after the colon, else nullptr. Exactly "the line's text before
// its first colon, trimmed, equals lit": lit holds no colon, space or tab, and trim() takes spaces,
// tabs and CRs from the name's end.
__attribute__((always_inline)) inline const char* after_name(const char* p, const char* e, std::string_view lit) {
  size_t n = lit.size();
  if (size_t(e - p) <= n || !iequals_lower(std::string_view(p, n), lit)) return nullptr;
  p += n;
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
  return p < e && *p == ':' ? p + 1 : nullptr;
}

template <typename Fn>
size_t each_header(std::string_view head, Newlines& nls, const char* first_nl, uint32_t first_letters, Fn fn);

// Where the head ends (each_header's answer) when its lines are not looked at.
size_t find_end(std::string_view head, Newlines& nls, const char* first_nl) {
  return each_header(head, nls, first_nl, 0, [](const char*, const char*) {});
}

// Calls fn(p, line_end) for each header line after the first line of a head (`first_nl`: the '\n' that
// ends it, from `nls`) whose name starts with one of `first_letters`, p at the name (spaces and tabs
// before it skipped; not at line_end). Returns the end of the head (just after its empty line), or 0
// when `head` has none.
template <typename Fn>
size_t each_header(std::string_view head, Newlines& nls, const char* first_nl, uint32_t first_letters, Fn fn) {
  const char* end = head.data() + head.size();
  const char* nl = first_nl;
  while (nl) {
    const char* p = nl + 1;
    nl = nls.next();
    // A line starting with a letter is not empty: one of another header is skipped on that letter.
    if (p != end && !may_match(*p, first_letters)) continue;
    const char* line_end = nl ? nl : end;
    if (line_end > p && line_end[-1] == '\r') --line_end;
    if (line_end == p) return nl ? size_t(nl + 1 - head.data()) : 0;
    while (p < line_end && (*p == ' ' || *p == '\t')) ++p;
    if (p < line_end) fn(p, line_end);
  }
  return 0;
}


}  // namespace

size_t find_head_end(std::string_view buf, size_t from) {
  // memchr from one line end to the next: the bytes between are never looked at one by one.
  const char* b = buf.data();
  size_t n = buf.size();
  size_t i = from >= 3 ? from - 3 : 0;
  while (i < n) {
    const void* nl = std::memchr(b + i, '\n', n - i);
    if (!nl) return 0;
    i = size_t(static_cast<const char*>(nl) - b);
    if (i + 1 < n && b[i + 1] == '\n') return i + 2;
    if (i + 2 < n && b[i + 1] == '\r' && b[i + 2] == '\n') return i + 3;
    ++i;
  }
  return 0;
}

int looks_like_request(std::string_view buf) {
  size_t i = 0;
  for (; i < buf.size() && buf[i] != ' '; ++i) {
    char c = buf[i];
    if (!((c >= 'A' && c <= 'Z') || c == '-' || c == '_') || i >= 24) return -1;
  }
  if (i == buf.size()) return 0;
  if (i == 0) return -1;
  size_t eol = buf.find('\n');
  if (eol == std::string_view::npos) return buf.size() > kMaxHead ? -1 : 0;
  std::string_view line = buf.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // The text after the line's last space is "HTTP/1.1" or "HTTP/1.0" exactly when the line ends with a
  // space and those eight bytes (they hold no space): one compare, no search back for the space.
  size_t n = line.size();
  if (n < 9 || line[n - 9] != ' ' || n - 9 <= i) return -1;
  std::string_view version = line.substr(n - 8);
  return (version == "HTTP/1.1" || version == "HTTP/1.0") ? 1 : -1;
}

namespace {
size_t scan_request(std::string_view head, RequestHead* out, bool* parsed);
}  // namespace

bool parse_request_head(std::string_view head, RequestHead* out) {
  bool ok;
  scan_request(head, out, &ok);
  return ok;
}

size_t parse_request(std::string_view data, RequestHead* out, bool* ok) { return scan_request(data, out, ok); }

namespace {
// Parses the request head at the start of `head` (*ok: valid), and returns where its empty line ends (0:
// none in `head`; then *out holds the lines seen).
size_t scan_request(std::string_view head, RequestHead* out, bool* parsed) {
  *parsed = false;
  Newlines nls(head.data(), head.size());
  const char* nl = nls.next();
  std::string_view line = head.substr(0, nl ? size_t(nl - head.data()) : head.size());
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == 0 || sp2 == sp1) return find_end(head, nls, nl);  // no method: not a request
  std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return find_end(head, nls, nl);
  out->method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t q = target.find('?');
  out->path = target.substr(0, q);
  if (q != std::string_view::npos) out->query = target.substr(q + 1);
  out->keep_alive = version == "HTTP/1.1";
  bool ok = true;
  // Only the headers txray keeps or needs for framing; the others are skipped on their first letter.
  auto bump = [](uint8_t& n) { n += n != 255; };
  size_t end = each_header(head, nls, nl, letters("hutcb"), [&](const char* p, const char* e) {
    const char* v;
    auto value = [&] { return std::string_view(v, size_t(e - v)); };
    switch (*p | 0x20) {
      case 'h':
        if ((v = after_name(p, e, "host"))) out->host = trim(value());
        break;
      case 'u':
        if ((v = after_name(p, e, "user-agent"))) out->user_agent = trim(value()).substr(0, 512);
        else if ((v = after_name(p, e, "upgrade")) && contains_token(value(), "h2c")) out->upgrade_h2c = true;
        break;
      case 't':
        if ((v = after_name(p, e, "traceparent"))) {
          if (!out->traceparents) out->traceparent = trim(value()).substr(0, 128);
          bump(out->traceparents);
        } else if ((v = after_name(p, e, "tracestate"))) {
          if (!out->tracestates) out->tracestate = trim(value());
          bump(out->tracestates);
        } else if ((v = after_name(p, e, "transfer-encoding"))) out->chunked = contains_token(value(), "chunked");
        break;
      case 'b':
        if ((v = after_name(p, e, "baggage"))) {
          if (!out->baggages) out->baggage = trim(value());
          bump(out->baggages);
        }
        break;
      case 'c':
        if ((v = after_name(p, e, "content-length"))) {
          ok &= parse_u64(value(), &out->content_length);
        } else if ((v = after_name(p, e, "connection"))) {
          if (iequals_lower(trim(value()), "keep-alive")) out->keep_alive = true;  // the usual value, one compare
          else if (contains_token(value(), "close")) out->keep_alive = false;
          else if (contains_token(value(), "keep-alive")) out->keep_alive = true;
        }
        break;
    }
  });
  *parsed = ok;
  return end;
}
}  // namespace

size_t header_lines(std::string_view head, std::string_view lower_name, std::string_view* out, size_t max) {
  if (lower_name.empty()) return 0;
  Newlines nls(head.data(), head.size());
  const char* nl = nls.next();
  size_t n = 0;
  char first[2] = {lower_name[0], 0};
  each_header(head, nls, nl, letters(first), [&](const char* p, const char* e) {
    if (const char* v = after_name(p, e, lower_name)) {
      if (n < max) out[n] = trim(std::string_view(v, size_t(e - v)));
      ++n;
    }
  });
  return n;
}

namespace {
// Parses a response head at the start of `data`; returns where it ends (0: no complete head in data,
// headers parsed so far are in *out), *ok false when it is not a valid HTTP/1.x response head. One pass
// over the head (Newlines): the status line, then Content-Length, Transfer-Encoding and Connection.
size_t scan_response_head(std::string_view data, ResponseHead* out, bool* ok) {
  *ok = false;
  Newlines nls(data.data(), data.size());
  const char* nl = nls.next();
  std::string_view line = data.substr(0, nl ? size_t(nl - data.data()) : data.size());
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1.") return nl ? 1 : 0;
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return 1;
    status = status * 10 + (line[i] - '0');
  }
  *out = ResponseHead{};
  out->status = status;
  out->close = line.substr(0, 8) == "HTTP/1.0";
  *ok = true;
  return each_header(data, nls, nl, letters("ct"), [&](const char* p, const char* e) {
    const char* v;
    auto value = [&] { return std::string_view(v, size_t(e - v)); };
    if ((*p | 0x20) == 't') {
      if ((v = after_name(p, e, "transfer-encoding"))) out->chunked = contains_token(value(), "chunked");
    } else if ((*p | 0x20) == 'c') {
      if ((v = after_name(p, e, "content-length"))) {
        *ok &= parse_u64(value(), &out->content_length);
      } else if ((v = after_name(p, e, "connection"))) {
        if (iequals_lower(trim(value()), "keep-alive")) out->close = false;  // the usual value, one compare
        else if (contains_token(value(), "close")) out->close = true;
        else if (contains_token(value(), "keep-alive")) out->close = false;
      }
    }
  });
}
}  // namespace

bool parse_response_head(std::string_view head, ResponseHead* out) {
  bool ok;
  scan_response_head(head, out, &ok);
  return ok;
}

void BodyFramer::reset(Mode m, uint64_t length) {
  mode_ = m;
  remaining_ = length;
  chunk_ = Chunk::size;
  size_digits_ = false;
  done_ = m == Mode::none || (m == Mode::length && length == 0);
}

size_t BodyFramer::feed(const char* p, size_t n) {
  if (done_) return 0;
  switch (mode_) {
    case Mode::none:
      return 0;
    case Mode::until_close:
      return n;
    case Mode::length: {
      size_t take = remaining_ < n ? size_t(remaining_) : n;
      remaining_ -= take;
      done_ = remaining_ == 0;
      return take;
    }
    case Mode::chunked:
      break;
  }
  size_t i = 0;
  while (i < n && !done_) {
    char c = p[i];
    switch (chunk_) {
      case Chunk::size: {
        int h = hexval(c);
        if (h >= 0) {
          if (remaining_ >> 59) {  // absurd chunk size: give up framing, count until close
            mode_ = Mode::until_close;
            return n;
          }
          remaining_ = remaining_ * 16 + uint64_t(h);
          size_digits_ = true;
        } else if (c == ';' || c == ' ' || c == '\t') {
          chunk_ = Chunk::ext;
        } else if (c == '\r') {
          chunk_ = Chunk::size_lf;
        } else if (c == '\n') {
          chunk_ = remaining_ ? Chunk::data : Chunk::trailer_start;
        } else {
          mode_ = Mode::until_close;
          return n;
        }
        ++i;
        break;
      }
      case Chunk::ext:
        if (c == '\n') chunk_ = remaining_ ? Chunk::data : Chunk::trailer_start;
        ++i;
        break;
      case Chunk::size_lf:
        if (c != '\n') {
          mode_ = Mode::until_close;
          return n;
        }
        chunk_ = remaining_ ? Chunk::data : Chunk::trailer_start;
        ++i;
        break;
      case Chunk::data: {
        size_t take = remaining_ < n - i ? size_t(remaining_) : n - i;
        remaining_ -= take;
        i += take;
        if (remaining_ == 0) chunk_ = Chunk::data_cr;
        break;
      }
      case Chunk::data_cr:
        chunk_ = c == '\r' ? Chunk::data_lf : Chunk::size;
        if (c == '\n') chunk_ = Chunk::size;
        size_digits_ = false;
        ++i;
        break;
      case Chunk::data_lf:
        chunk_ = Chunk::size;
        size_digits_ = false;
        ++i;
        break;
      case Chunk::trailer_start:  // after the last chunk: an empty line ends the body, else trailers
        if (c == '\r') chunk_ = Chunk::final_lf;
        else if (c == '\n') done_ = true;
        else chunk_ = Chunk::trailer;
        ++i;
        break;
      case Chunk::trailer:
        if (c == '\n') chunk_ = Chunk::trailer_start;
        ++i;
        break;
      case Chunk::trailer_lf:
      case Chunk::final_lf:
        done_ = true;
        ++i;
        break;
    }
  }
  return i;
}

bool BodyFramer::feed_opaque(uint64_t n) {
  if (done_) return true;
  if (mode_ == Mode::until_close) return true;
  if (mode_ == Mode::length) {
    remaining_ = n >= remaining_ ? 0 : remaining_ - n;
    done_ = remaining_ == 0;
    return true;
  }
  if (mode_ == Mode::chunked && chunk_ == Chunk::data && n <= remaining_) {
    remaining_ -= n;
    if (remaining_ == 0) chunk_ = Chunk::data_cr;
    return true;
  }
  mode_ = Mode::until_close;
  return false;
}

void ResponseTracker::reset(bool head_request) {
  buf_.clear();
  scanned_ = 0;
  head_ = ResponseHead{};
  body_.reset(BodyFramer::Mode::none);
  head_request_ = head_request;
  head_done_ = false;
  done_ = false;
  gave_up_ = false;
}

size_t ResponseTracker::feed(const char* p, size_t n) {
  size_t used = 0;
  while (used < n && !done_) {
    if (head_done_) {
      used += body_.feed(p + used, n - used);
      done_ = body_.done();
      break;
    }
    // Accumulate the head; only what is needed to find its end is kept.
    size_t before = buf_.size();
    size_t take = n - used;
    if (before + take > kMaxHead) take = kMaxHead - before;
    size_t end = 0;
    ResponseHead h;
    bool ok = false;
    if (before == 0) {
      // The whole head in this write (the usual case): found and parsed in one pass, no copy. Anything
      // else (incomplete, or not understood) takes the path below, so the outcome never depends on how
      // the program split its writes.
      end = scan_response_head(std::string_view(p + used, take), &h, &ok);
      if (!ok) end = 0;
    }
    if (end == 0) {
      buf_.append(p + used, take);
      end = find_head_end(buf_, scanned_);
      scanned_ = buf_.size();
      if (end != 0) ok = parse_response_head(std::string_view(buf_).substr(0, end), &h);
    }
    if (end == 0) {
      used += take;
      if (buf_.size() >= kMaxHead) {  // not understood: it ends when the connection closes
        gave_up_ = true;
        head_done_ = true;
        body_.reset(BodyFramer::Mode::until_close);
        used = n;
      }
      break;
    }
    used += end - before;
    if (!ok) {
      gave_up_ = true;
      head_done_ = true;
      body_.reset(BodyFramer::Mode::until_close);
      return n;
    }
    buf_.clear();
    scanned_ = 0;
    if (h.status >= 100 && h.status < 200 && h.status != 101) continue;  // interim: the final one follows
    head_ = h;
    head_done_ = true;
    if (head_request_ || h.status == 204 || h.status == 304 || h.status == 101 || h.status < 200)
      body_.reset(BodyFramer::Mode::none);
    else if (h.chunked) body_.reset(BodyFramer::Mode::chunked);
    else if (h.content_length >= 0) body_.reset(BodyFramer::Mode::length, uint64_t(h.content_length));
    else body_.reset(BodyFramer::Mode::until_close);
    done_ = body_.done();
  }
  return used;
}

void ResponseTracker::feed_opaque(uint64_t n) {
  if (done_) return;
  if (!head_done_) {  // a head we cannot see: count until close
    gave_up_ = true;
    head_done_ = true;
    body_.reset(BodyFramer::Mode::until_close);
    return;
  }
  body_.feed_opaque(n);
  done_ = body_.done();
}

}  // namespace txray::http
