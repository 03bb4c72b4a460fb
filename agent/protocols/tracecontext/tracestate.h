// W3C Trace Context Level 2 `tracestate` (§3.3, §3.5) and W3C Baggage `baggage` header values, as the
// agent keeps them per transaction and sends them on with every outbound call it injects into.
//
// tracestate: the header lines of a request are combined in order (RFC 9110 §5.3: one list, as if joined
// by commas); empty members and the optional whitespace around members are allowed and left out. The
// list is checked against the grammar (keys: simple `lcalpha 0*255(...)` or multi-tenant
// `tenant@system`, values 1..256 printable characters not ending in a space, no ',' or '='), at most 32
// members, no key twice: anything else and the whole list is dropped (§3.3.1.1: never sent on malformed).
// A valid list longer than kMaxTraceState is truncated as §3.3.1.5 says: members longer than 128
// characters go first, then members from the end, until it fits (512 is the length every vendor SHOULD
// at least propagate).
//
// baggage: passed on unchanged (the lines joined by ","), only checked to be one header's worth of
// visible characters so the agent can never write a broken or split header; a value longer than
// kMaxBaggage is not propagated at all (W3C Baggage: no partial list). Pure: no I/O; the output strings
// are the caller's (their capacity is reused).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace txray {

inline constexpr size_t kMaxTraceState = 512;
inline constexpr size_t kMaxTraceStateMembers = 32;
inline constexpr size_t kMaxBaggage = 1024;

enum class ListResult : unsigned char { empty, kept, truncated, dropped };

// Combines the header lines lines[0..n) into out ("k1=v1,k2=v2", no whitespace around members). empty:
// no member at all (out empty); dropped: a line broke the grammar or the limits (out empty).
ListResult combine_tracestate(const std::string_view* lines, size_t n, std::string& out);

// Whether one member ("key=value", trimmed) is valid by the grammar.
bool valid_tracestate_member(std::string_view member);

// Joins the baggage lines by "," (each trimmed, empty ones left out) into out; dropped (out empty) when
// a line holds a control character or the whole is longer than kMaxBaggage.
ListResult combine_baggage(const std::string_view* lines, size_t n, std::string& out);

}  // namespace txray
