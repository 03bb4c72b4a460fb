#include "ids.h"

namespace txray {

namespace {
constexpr char kHex[] = "0123456789abcdef";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string hex16(uint64_t v) {
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = kHex[v & 0xf];
  return s;
}

std::string trace_hex(std::string_view raw) {
  if (raw.size() != 16) return {};
  std::string s;
  s.reserve(32);
  for (unsigned char c : raw) {
    s += kHex[c >> 4];
    s += kHex[c & 0xf];
  }
  return s;
}

std::optional<uint64_t> parse_hex64(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = hex_value(c);
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

bool is_trace_hex(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s)
    if (hex_value(c) < 0) return false;
  return true;
}

}  // namespace txray
