#include "transport/pb_writer.h"

namespace txray::pb {
namespace {

// Length of the valid UTF-8 sequence starting at p (1..4), or 0 when it is not valid.
size_t utf8_seq(const unsigned char* p, size_t left) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (n > left) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (p[i] & 0x3F);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

bool Writer::valid_utf8(std::string_view s) {
  auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0, n = s.size();
  while (i < n) {
    if (i + 8 <= n) {  // eight ASCII bytes at a time (nearly every text the agent sends)
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (!(w & 0x8080808080808080ull)) {
        i += 8;
        continue;
      }
    }
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t k = utf8_seq(p + i, n - i);
    if (!k) return false;
    i += k;
  }
  return true;
}

std::string Writer::sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0, n = s.size();
  while (i < n) {
    size_t k = utf8_seq(p + i, n - i);
    if (!k) {
      out.push_back('?');
      ++i;
    } else {
      out.append(s.data() + i, k);
      i += k;
    }
  }
  return out;
}

}  // namespace txray::pb
