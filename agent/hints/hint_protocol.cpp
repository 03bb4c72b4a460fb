#include "hints/hint_protocol.h"

#include <cstring>

namespace txray::hint {
namespace {

// Reads a decimal number (at most 10 digits, <= INT32_MAX) at *p.
bool read_dec(const char*& p, const char* end, int64_t max, int64_t* out) {
  int64_t v = 0;
  int digits = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    v = v * 10 + (*p++ - '0');
    if (++digits > 10 || v > max) return false;
  }
  *out = v;
  return digits > 0;
}

// Reads exactly 16 hex digits.
bool read_hex16(const char*& p, const char* end, uint64_t* out) {
  if (end - p < 16) return false;
  uint64_t v = 0;
  for (int i = 0; i < 16; ++i) {
    char c = *p++;
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = (v << 4) | uint64_t(d);
  }
  *out = v;
  return true;
}

bool read_fd(const char*& p, const char* end, int32_t* fd) {
  int64_t v;
  if (!read_dec(p, end, 2147483647, &v)) return false;
  *fd = int32_t(v);
  return true;
}

bool colon(const char*& p, const char* end) {
  if (p < end && *p == ':') {
    ++p;
    return true;
  }
  return false;
}

}  // namespace

bool parse(const char* buf, size_t len, Message* m) {
  if (!buf) return false;
  const char* p = buf;
  const char* end = buf + strnlen(buf, len);
  if (p == end) return false;
  *m = Message{};
  m->op = *p++;
  switch (m->op) {
    case 'H':
      return true;  // the runtime's name is informative only
    case 'L':
      return p == end;
    case 'R': {
      if (!read_fd(p, end, &m->fd)) return false;
      if (colon(p, end)) {
        int64_t n;
        if (!read_dec(p, end, 0xffffffffll, &n)) return false;
        m->n = uint32_t(n);
      }
      return p == end;
    }
    case 'E':
    case 'C':
      if (m->op == 'C' && p == end) return true;  // the thread's current request
      if (!read_fd(p, end, &m->fd)) return false;
      if (colon(p, end) && !read_hex16(p, end, &m->token)) return false;
      return p == end;
    case 'O':
      if (!read_fd(p, end, &m->fd) || !colon(p, end) || !read_fd(p, end, &m->req_fd) || !colon(p, end) ||
          !read_hex16(p, end, &m->token))
        return false;
      return p == end;
    case 'A':
    case 'D':
      return read_hex16(p, end, &m->token) && p == end;
    case 'B': {
      int64_t slots;
      if (!read_dec(p, end, 0xffffffffll, &slots) || slots == 0) return false;
      m->n = uint32_t(slots);
      if (colon(p, end)) {
        int64_t list;
        if (!read_dec(p, end, 0xffffffffll, &list) || list == 0) return false;
        m->list = uint32_t(list);
      }
      return p == end;
    }
    case 'U':
      return p == end;
    case 'S':
      if (p == end) return true;  // S alone: a shim will name spans
      return read_hex16(p, end, &m->token) && p == end && m->token != 0;
    default:
      return false;
  }
}

}  // namespace txray::hint
