#include "http_parse.h"

#include <cstring>

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
// iequals(a, lit). With lit a literal the masks fold to constants (issue 14: iequals was ~6 instructions
// a byte on every response head).
inline bool iequals_lower(std::string_view a, std::string_view lit) {
  if (a.size() != lit.size()) return false;
  size_t i = 0;
  for (; i + 8 <= a.size(); i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, lit.data() + i, 8);
    if ((x | letter_bits(y)) != y) return false;
  }
  for (; i < a.size(); ++i) {
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

// memchr that takes an empty range (and then a null pointer: an empty string_view's data()).
inline const char* find_byte(const char* p, size_t n, char c) {
  return n ? static_cast<const char*>(std::memchr(p, c, n)) : nullptr;
}

// A set of header names' first letters (case-insensitive), so that lines of other headers are skipped
// on their first byte without looking for their colon.
constexpr uint32_t letters(const char* names) {
  uint32_t m = 0;
  for (; *names; ++names) m |= 1u << ((*names | 0x20) - 'a');
  return m;
}
inline bool may_match(char c, uint32_t first_letters) {
  unsigned i = unsigned((c | 0x20) - 'a');
  return i >= 26 || (first_letters >> i) & 1;  // not a letter (a space before the name…): looked at
}

// Calls fn(name, value) for each header line after the first line of a head whose name starts with one
// of `first_letters`. The name is trimmed; the value is not (callers trim the values of the few headers
// they keep). Returns the end of the head (just after its empty line), or 0 when `head` has none.
template <typename Fn>
size_t each_header(std::string_view head, uint32_t first_letters, Fn fn) {
  const char* p = head.data();
  const char* end = p + head.size();
  const char* nl = find_byte(p, head.size(), '\n');
  while (nl) {
    p = nl + 1;
    nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
    const char* line_end = nl ? nl : end;
    if (line_end > p && line_end[-1] == '\r') --line_end;
    if (line_end == p) return nl ? size_t(nl + 1 - head.data()) : 0;
    if (!may_match(*p, first_letters)) continue;
    const char* colon = static_cast<const char*>(std::memchr(p, ':', size_t(line_end - p)));
    if (!colon) continue;
    fn(trim(std::string_view(p, size_t(colon - p))), std::string_view(colon + 1, size_t(line_end - colon - 1)));
  }
  return 0;
}

std::string_view first_line(std::string_view head) {
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
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
  size_t sp = line.rfind(' ');
  if (sp == std::string_view::npos || sp <= i) return -1;
  std::string_view version = line.substr(sp + 1);
  return (version == "HTTP/1.1" || version == "HTTP/1.0") ? 1 : -1;
}

bool parse_request_head(std::string_view head, RequestHead* out) {
  std::string_view line = first_line(head);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == 0 || sp2 == sp1) return false;  // no method: not a request
  std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return false;
  out->method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t q = target.find('?');
  out->path = target.substr(0, q);
  if (q != std::string_view::npos) out->query = target.substr(q + 1);
  out->keep_alive = version == "HTTP/1.1";
  bool ok = true;
  // Only the headers txray keeps or needs for framing; the others are skipped on their name's length.
  each_header(head, letters("hutc"), [&](std::string_view name, std::string_view value) {
    switch (name.size()) {
      case 7:
        if (iequals_lower(name, "upgrade") && contains_token(value, "h2c")) out->upgrade_h2c = true;
        break;
      case 4:
        if (iequals_lower(name, "host")) out->host = trim(value);
        break;
      case 10:
        if (iequals_lower(name, "user-agent")) out->user_agent = trim(value).substr(0, 512);
        else if (iequals_lower(name, "connection")) {
          if (iequals_lower(trim(value), "keep-alive")) out->keep_alive = true;  // the usual value, one compare
          else if (contains_token(value, "close")) out->keep_alive = false;
          else if (contains_token(value, "keep-alive")) out->keep_alive = true;
        }
        break;
      case 11:
        if (iequals_lower(name, "traceparent")) out->traceparent = trim(value).substr(0, 128);
        break;
      case 14:
        if (iequals_lower(name, "content-length")) ok &= parse_u64(value, &out->content_length);
        break;
      case 17:
        if (iequals_lower(name, "transfer-encoding")) out->chunked = contains_token(value, "chunked");
        break;
    }
  });
  return ok;
}

namespace {
// Parses a response head at the start of `data`; returns where it ends (0: no complete head in data,
// headers parsed so far are in *out), *ok false when it is not a valid HTTP/1.x response head.
size_t scan_response_head(std::string_view data, ResponseHead* out, bool* ok) {
  *ok = false;
  const char* nl = find_byte(data.data(), data.size(), '\n');
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
  return each_header(data, letters("ct"), [&](std::string_view name, std::string_view value) {
    if (name.size() == 14 && iequals_lower(name, "content-length")) *ok &= parse_u64(value, &out->content_length);
    else if (name.size() == 17 && iequals_lower(name, "transfer-encoding")) out->chunked = contains_token(value, "chunked");
    else if (name.size() == 10 && iequals_lower(name, "connection")) {
      if (iequals_lower(trim(value), "keep-alive")) out->close = false;  // the usual value, one compare
      else if (contains_token(value, "close")) out->close = true;
      else if (contains_token(value, "keep-alive")) out->close = false;
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
