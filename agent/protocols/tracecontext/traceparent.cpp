#include "protocols/tracecontext/traceparent.h"

namespace txray {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Value of a lowercase hex digit, -1 otherwise (the spec forbids uppercase).
int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool parse_hex_bytes(std::string_view s, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

bool parse_traceparent(std::string_view value, TraceParent& out) {
  std::string_view v = trim(value);
  if (v.size() < kTraceParentLen) return false;
  uint8_t version;
  if (!parse_hex_bytes(v.substr(0, 2), &version, 1) || version == 0xff) return false;
  if (version == 0 && v.size() != kTraceParentLen) return false;
  // A future version may append fields, always after a '-'.
  if (v.size() > kTraceParentLen && v[kTraceParentLen] != '-') return false;
  if (v[2] != '-' || v[35] != '-' || v[52] != '-') return false;

  TraceParent tp;
  if (!parse_hex_bytes(v.substr(3, 32), tp.trace_id, 16)) return false;
  uint8_t span[8];
  if (!parse_hex_bytes(v.substr(36, 16), span, 8)) return false;
  if (!parse_hex_bytes(v.substr(53, 2), &tp.flags, 1)) return false;

  bool trace_zero = true;
  for (uint8_t b : tp.trace_id) trace_zero &= (b == 0);
  for (uint8_t b : span) tp.parent_id = tp.parent_id << 8 | b;
  if (trace_zero || tp.parent_id == 0) return false;
  out = tp;
  return true;
}

void hex_trace_id(const uint8_t trace_id[16], char out[32]) {
  for (int i = 0; i < 16; ++i) {
    out[2 * i] = kHex[trace_id[i] >> 4];
    out[2 * i + 1] = kHex[trace_id[i] & 15];
  }
}

void hex_span_id(uint64_t id, char out[16]) {
  for (int i = 15; i >= 0; --i, id >>= 4) out[i] = kHex[id & 15];
}

void format_traceparent(const uint8_t trace_id[16], uint64_t span_id, uint8_t flags,
                        char out[kTraceParentLen]) {
  out[0] = '0';
  out[1] = '0';
  out[2] = '-';
  hex_trace_id(trace_id, out + 3);
  out[35] = '-';
  hex_span_id(span_id, out + 36);
  out[52] = '-';
  out[53] = kHex[flags >> 4];
  out[54] = kHex[flags & 15];
}

}  // namespace txray
