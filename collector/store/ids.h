// Text forms of txray's 64-bit ids and the text hash shared by the writer and the readers.
// Ids travel as unsigned 64-bit values, are stored in SQLite as the signed two's-complement view of the
// same bits, and are printed as 16 lowercase hex digits (trace ids: 32).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace txray {

std::string hex16(uint64_t v);
// 16 raw bytes -> 32 lowercase hex digits; any other length -> "" (no trace id).
std::string trace_hex(std::string_view raw16);
// "1a2b…" (1 to 16 hex digits, optional 0x) -> value; nullopt on anything else.
std::optional<uint64_t> parse_hex64(std::string_view s);
// true when s is exactly 32 hex digits (a trace id as printed).
bool is_trace_hex(std::string_view s);

inline int64_t to_signed(uint64_t v) { return static_cast<int64_t>(v); }
inline uint64_t to_unsigned(int64_t v) { return static_cast<uint64_t>(v); }

// 64-bit FNV-1a: the key of the texts table.
inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace txray
