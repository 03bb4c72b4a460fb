// W3C Trace Context `traceparent` header values (https://www.w3.org/TR/trace-context/):
//   00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>
// Parsing follows the spec's rules for receivers: lowercase hex only, all-zero ids invalid, version ff
// invalid, a version-00 value is exactly 55 characters, a higher version may carry more fields after a
// '-'. Pure functions: no allocation, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace txray {

struct TraceParent {
  uint8_t trace_id[16] = {};
  uint64_t parent_id = 0;  // the caller's span id
  uint8_t flags = 0;       // bit 0: sampled
};

// Length of a formatted version-00 value.
inline constexpr size_t kTraceParentLen = 55;

// Parses a header value (surrounding spaces and tabs allowed). Returns false when it is not valid, in
// which case the receiver must start a new trace.
bool parse_traceparent(std::string_view value, TraceParent& out);

// Writes the 55 characters of "00-<trace>-<span>-<flags>" to out (no terminating NUL).
void format_traceparent(const uint8_t trace_id[16], uint64_t span_id, uint8_t flags,
                        char out[kTraceParentLen]);

// Lowercase hex of 16 bytes (32 chars) / of a 64-bit id (16 chars), for text output and tests.
void hex_trace_id(const uint8_t trace_id[16], char out[32]);
void hex_span_id(uint64_t id, char out[16]);

}  // namespace txray
