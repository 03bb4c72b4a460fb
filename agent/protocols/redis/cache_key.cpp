#include "protocols/redis/cache_key.h"

#include <cstdlib>
#include <cstring>

namespace txray::cachekey {
namespace {

bool is_hex(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_alnum(unsigned char c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

// A UUID starts at p (36 bytes, hex with '-' at 8, 13, 18, 23) and is not glued to a longer word.
bool uuid_at(std::string_view k, size_t i) {
  if (k.size() - i < 36) return false;
  for (size_t j = 0; j < 36; ++j) {
    unsigned char c = k[i + j];
    bool dash = j == 8 || j == 13 || j == 18 || j == 23;
    if (dash ? c != '-' : !is_hex(c)) return false;
  }
  return k.size() - i == 36 || !is_alnum(static_cast<unsigned char>(k[i + 36]));
}

bool plain(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '\\'; }  // kept as it is

void put(std::string& out, unsigned char c) {
  if (plain(c)) {
    out.push_back(char(c));
    return;
  }
  static const char hex[] = "0123456789abcdef";
  out.append("\\x");
  out.push_back(hex[c >> 4]);
  out.push_back(hex[c & 15]);
}

}  // namespace

void append(std::string& out, std::string_view key, bool mask) {
  bool cut = key.size() > kMaxKey;
  if (cut) key = key.substr(0, kMaxKey);
  size_t i = 0;
  while (i < key.size()) {
    unsigned char c = key[i];
    if (!mask || !is_alnum(c)) {
      // a run that needs no escaping goes in one append (a command name, a raw key, "item:")
      size_t j = i;
      while (j < key.size() && plain(static_cast<unsigned char>(key[j])) && (!mask || !is_alnum(static_cast<unsigned char>(key[j]))))
        ++j;
      if (j > i) {
        out.append(key.data() + i, j - i);
        i = j;
        continue;
      }
      put(out, c);
      ++i;
      continue;
    }
    if ((i == 0 || !is_alnum(static_cast<unsigned char>(key[i - 1]))) && uuid_at(key, i)) {
      out.push_back('?');
      i += 36;
      continue;
    }
    size_t j = i;
    bool hex = true, digit = false, upper = false, lower = false;
    while (j < key.size() && is_alnum(static_cast<unsigned char>(key[j]))) {
      unsigned char d = static_cast<unsigned char>(key[j]);
      hex = hex && is_hex(d);
      digit = digit || is_digit(d);
      upper = upper || (d >= 'A' && d <= 'Z');
      lower = lower || (d >= 'a' && d <= 'z');
      ++j;
    }
    // Whole words that are ids, not names: hashes and ObjectIds (hex), random tokens (base62/base36 such
    // as libmemcached's memcslap keys or session ids). Kept, each such key would be a pattern of its own.
    size_t len = j - i;
    bool token = (hex && digit && len >= 8) || (digit && upper && lower && len >= 16) || (digit && len >= 20) ||
                 (upper && lower && len >= 32);
    if (token) {
      out.push_back('?');
    } else {
      // a word: its digit runs masked, its letters kept
      for (size_t m = i; m < j;) {
        if (is_digit(static_cast<unsigned char>(key[m]))) {
          out.push_back('?');
          while (m < j && is_digit(static_cast<unsigned char>(key[m]))) ++m;
        } else {
          size_t e = m;
          while (e < j && !is_digit(static_cast<unsigned char>(key[e]))) ++e;
          out.append(key.data() + m, e - m);
          m = e;
        }
      }
    }
    i = j;
  }
  if (cut) out.append("…");
}

bool parse_raw(const char* (*get)(const char*)) {
  if (const char* v = get("TXRAY_CACHE_KEYS"); v && *v) return !std::strcmp(v, "raw");
  if (const char* v = get("TXRAY_SQL"); v && !std::strcmp(v, "raw")) return true;
  if (const char* v = get("TXRAY_VALUES"); v && !std::strcmp(v, "raw")) return true;
  return false;
}

bool raw_keys() {
  static const bool raw = parse_raw([](const char* k) -> const char* { return std::getenv(k); });
  return raw;
}

}  // namespace txray::cachekey
