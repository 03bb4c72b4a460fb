#include "protocols/redis/resp.h"

#include <cstring>

namespace txray::redis {

bool parse_int(const char* p, size_t n, int64_t* out) {
  bool neg = n > 0 && p[0] == '-';
  size_t i = neg ? 1 : 0;
  if (i == n || n - i > 18) return false;
  int64_t v = 0;
  for (; i < n; ++i) {
    if (p[i] < '0' || p[i] > '9') return false;
    v = v * 10 + (p[i] - '0');
  }
  *out = neg ? -v : v;
  return true;
}

namespace {
// Redis's own limits (proto-max-bulk-len may be raised; 4 GiB is far past any configuration seen).
constexpr int64_t kMaxArgs = 1 << 20;
constexpr int64_t kMaxBulk = int64_t(1) << 32;
constexpr int64_t kMaxBlob = int64_t(1) << 40;
constexpr int64_t kMaxElements = int64_t(1) << 32;
}  // namespace

size_t CommandReader::feed(const char* p, size_t n, Ev* ev) {
  *ev = Ev::none;
  size_t i = 0;
  while (i < n) {
    switch (st_) {
      case St::idle: {
        // An empty line between commands is an empty inline command, which the server skips without a
        // reply: `redis-cli --pipe` writes "\r\n" before its closing ECHO to end whatever the input left.
        if (p[i] == '\n') {
          ++i;
          break;
        }
        if (p[i] == '\r') {
          ++i;
          st_ = St::blank;
          break;
        }
        if (p[i] != '*') {
          *ev = Ev::bad;
          return i;
        }
        args = 0;
        for (auto& a : arg) a.clear();
        key.clear();
        bytes = 1;
        line_len_ = 0;
        st_ = St::count;
        *ev = Ev::start;
        return i + 1;
      }
      case St::count:
      case St::bulk_len: {
        const char* nl = static_cast<const char*>(memchr(p + i, '\n', n - i));
        size_t take = nl ? size_t(nl - (p + i)) + 1 : n - i;
        if (line_len_ + take > sizeof line_) {
          bytes += sizeof line_ - line_len_;  // the line up to its bound, wherever the writes split it
          *ev = Ev::bad;
          return i;
        }
        memcpy(line_ + line_len_, p + i, take);
        line_len_ += take;
        bytes += take;
        i += take;
        if (!nl) break;
        size_t L = line_len_;
        line_len_ = 0;
        if (L < 2 || line_[L - 2] != '\r') {
          *ev = Ev::bad;
          return i;
        }
        int64_t v;
        if (st_ == St::count) {
          if (!parse_int(line_, L - 2, &v) || v < 1 || v > kMaxArgs) {
            *ev = Ev::bad;
            return i;
          }
          args = left_ = v;
          index_ = 0;
          st_ = St::bulk_len;
        } else {
          if (line_[0] != '$' || !parse_int(line_ + 1, L - 3, &v) || v < 0 || v > kMaxBulk) {
            *ev = Ev::bad;
            return i;
          }
          data_left_ = uint64_t(v);
          crlf_ = 0;
          st_ = v ? St::data : St::crlf;
        }
        break;
      }
      case St::data: {
        size_t take = data_left_ < n - i ? size_t(data_left_) : n - i;
        if (index_ < 3) arg[index_].add(p + i, take);
        if (index_ == 1) key.add(p + i, take);
        data_left_ -= take;
        bytes += take;
        i += take;
        if (!data_left_) st_ = St::crlf;
        break;
      }
      case St::blank:
        if (p[i] != '\n') {
          *ev = Ev::bad;
          return i;
        }
        ++i;
        st_ = St::idle;
        break;
      case St::crlf: {
        if (p[i] != (crlf_ ? '\n' : '\r')) {
          *ev = Ev::bad;
          return i;
        }
        ++i;
        ++bytes;
        if (++crlf_ < 2) break;
        crlf_ = 0;
        ++index_;
        if (--left_ == 0) {
          st_ = St::idle;
          *ev = Ev::done;
          return i;
        }
        st_ = St::bulk_len;
        break;
      }
    }
  }
  return i;
}

// ---------------------------------------------------------------------------------------------------

bool FrameReader::value_done(bool attribute) {
  for (;;) {
    if (depth_ == 0) return !attribute;
    if (attribute) return false;  // an attribute is no element of the aggregate it sits in
    Level& t = stk_[depth_ - 1];
    ++t.index;
    if (--t.left > 0) return false;
    attribute = t.attribute;
    --depth_;
  }
}

// A whole line after the type byte: false when it is not RESP; done_ when it completed the frame.
bool FrameReader::on_line() {
  // line_full_ counts the type byte's line after the type byte, '\r\n' included
  if (line_full_ < 2 || prev_cr_ == false) return false;
  uint64_t content = line_full_ - 2;
  size_t kept = line_len_ < content ? line_len_ : size_t(content);
  bool whole = kept == content;
  bool top = depth_ == 0;
  bool first = depth_ == 1 && stk_[0].index == 0 && !stk_[0].attribute;
  if (top && type_ != '|') f_.kind = type_;
  int64_t v = 0;
  done_ = false;
  switch (type_) {
    case '+':
    case '-':
      if (top) {
        f_.line.add(line_, kept);
        f_.line.full = content;
      } else if (first) {
        f_.first.add(line_, kept);
      }
      done_ = value_done(false);
      st_ = St::type;
      return true;
    case ':':
      if (!whole || !parse_int(line_, kept, &v)) return false;
      if (depth_ == 1 && stk_[0].index == 2) f_.third = v;
      done_ = value_done(false);
      st_ = St::type;
      return true;
    case ',':
    case '(':
    case '#':
    case '_':
      if (type_ == '_' && top) f_.null = true;
      done_ = value_done(false);
      st_ = St::type;
      return true;
    case '$':
    case '!':
    case '=':
      if (!whole || !parse_int(line_, kept, &v)) return false;
      if (v == -1 && type_ == '$') {
        if (top) f_.null = true;
        done_ = value_done(false);
        st_ = St::type;
        return true;
      }
      if (v < 0 || v > kMaxBlob) return false;
      capture_ = (top && type_ == '!') ? 1 : first ? 2 : 0;
      data_left_ = uint64_t(v);
      crlf_ = 0;
      st_ = v ? St::data : St::crlf;
      return true;
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      if (!whole || !parse_int(line_, kept, &v)) return false;
      if (v == -1 && type_ == '*') {
        if (top) f_.null = true;
        done_ = value_done(false);
        st_ = St::type;
        return true;
      }
      if (v < 0 || v > kMaxElements) return false;
      if (top && type_ != '|') f_.elements = v;
      st_ = St::type;
      if (v == 0) {
        done_ = value_done(type_ == '|');
        return true;
      }
      if (depth_ == kMaxDepth) return false;
      int64_t m = (type_ == '%' || type_ == '|') ? 2 : 1;
      stk_[depth_++] = Level{v * m, 0, type_ == '|'};
      return true;
    }
    default:
      return false;
  }
}

size_t FrameReader::feed(const char* p, size_t n, Ev* ev) {
  *ev = Ev::none;
  size_t i = 0;
  while (i < n) {
    switch (st_) {
      case St::type:
        if (fresh_) {
          f_ = Frame{};
          fresh_ = false;
        }
        type_ = p[i++];
        ++f_.bytes;
        line_len_ = 0;
        line_full_ = 0;
        prev_cr_ = false;
        st_ = St::line;
        break;
      case St::line: {
        const char* nl = static_cast<const char*>(memchr(p + i, '\n', n - i));
        size_t take = nl ? size_t(nl - (p + i)) + 1 : n - i;
        size_t room = sizeof line_ - line_len_;
        size_t k = take < room ? take : room;
        memcpy(line_ + line_len_, p + i, k);
        line_len_ += k;
        line_full_ += take;
        // the byte before the '\n' (in this piece, or the last one of the piece before)
        if (nl) prev_cr_ = take >= 2 ? p[i + take - 2] == '\r' : prev_cr_;
        else prev_cr_ = p[i + take - 1] == '\r';
        f_.bytes += take;
        i += take;
        if (!nl) break;
        if (!on_line()) {
          *ev = Ev::bad;
          return i;
        }
        if (done_) {
          fresh_ = true;
          *ev = Ev::frame;
          return i;
        }
        break;
      }
      case St::data: {
        size_t take = data_left_ < n - i ? size_t(data_left_) : n - i;
        if (capture_ == 1) f_.line.add(p + i, take);
        else if (capture_ == 2) f_.first.add(p + i, take);
        data_left_ -= take;
        f_.bytes += take;
        i += take;
        if (!data_left_) st_ = St::crlf;
        break;
      }
      case St::crlf:
        if (p[i] != (crlf_ ? '\n' : '\r')) {
          *ev = Ev::bad;
          return i;
        }
        ++i;
        ++f_.bytes;
        if (++crlf_ < 2) break;
        crlf_ = 0;
        capture_ = 0;
        st_ = St::type;
        if (value_done(false)) {
          fresh_ = true;
          *ev = Ev::frame;
          return i;
        }
        break;
    }
  }
  return i;
}

}  // namespace txray::redis
