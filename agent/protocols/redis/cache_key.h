// Cache keys as rows show them, shared by the Redis and memcached parsers (protocols/memcached includes
// this header through a named seam): a key's pattern, with the parts that vary per object masked, is
// what a row's text and its fingerprint are made of, so `txray report` groups `GET item:42` and
// `GET item:43` as `GET item:?` (docs/protocols.md).
//
// Masked: every run of decimal digits ("item:42" -> "item:?", "v2" -> "v?"), a UUID (8-4-4-4-12 hex) as a
// whole, and as a whole a word (a run of letters and digits) that is an id: 8 or more hex digits with a
// digit (hashes, ObjectIds), 16 or more with a digit and both cases (base62 tokens: session ids,
// memcslap's keys), 20 or more with a digit, or 32 or more with both cases. Bytes outside
// printable ASCII are written \xNN. A key is cut at kMaxKey bytes ("…" marks the cut).
//
// TXRAY_CACHE_KEYS=raw keeps keys as the program wrote them (still escaped and cut), =mask is the
// default; unset, TXRAY_SQL=raw or TXRAY_VALUES=raw mean raw here too (the one "keep values" switch).
// Values (SET's value, memcached's data blocks) and credentials (AUTH, HELLO … AUTH) are never kept,
// whatever the setting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txray::cachekey {

inline constexpr size_t kMaxKey = 256;

// Appends key's pattern (mask = true) or its raw form (escaped, cut) to out.
void append(std::string& out, std::string_view key, bool mask);

// True when keys are kept raw (TXRAY_CACHE_KEYS, read once).
bool raw_keys();
// The same from a getenv-like function (tests).
bool parse_raw(const char* (*get)(const char*));

// FNV-1a 64 of a row's masked text: its fingerprint (never 0).
inline uint64_t fingerprint(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h ? h : 1;
}

}  // namespace txray::cachekey
