// The W3C trace context of a transaction, in and out (Trace Context Level 2 §3 and §4, W3C Baggage):
// what an inbound request's headers make of it, and what every outbound call the agent injects into
// carries. The one place that decides, so HTTP/1.x, HTTP/2 and gRPC behave alike (docs/tracing.md has
// the table, case by case).
//
// In (accept_context):
//  - exactly one valid `traceparent` (traceparent.h): the transaction joins its trace, its parent is the
//    header's parent id, its flags are kept as received (sampled and random bits; the others are
//    reserved and sent as 0);
//  - none, an invalid one, or more than one (§3.2: a duplicated header is invalid): a new trace with the
//    agent's own ids and flags, and `tracestate` is not looked at (§3.3.1.1: without a valid
//    traceparent, tracestate MUST NOT be used);
//  - `tracestate` lines combined and checked (tracestate.h); a list that breaks the rules is dropped and
//    the transaction says why (attribute `tracestate_dropped`);
//  - `baggage` lines kept as they are (attribute `baggage_dropped` when too long to be sent whole).
// Out (outbound_context): version 00, the transaction's trace id, a new parent id per call (the
// caller's), flags: as received, else the agent's head-sampling decision for this trace id (sampled
// when TXRAY_SAMPLE_RATE keeps it) with the random bit set, as the agent's trace ids are random.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocols/tracecontext/traceparent.h"
#include "protocols/tracecontext/tracestate.h"

namespace txray {

struct Transaction;

inline constexpr uint8_t kFlagSampled = 0x01;
inline constexpr uint8_t kFlagRandom = 0x02;
inline constexpr uint8_t kKnownFlags = kFlagSampled | kFlagRandom;

// The trace headers of one inbound request, as its parser found them.
struct InboundContext {
  std::string_view traceparent;  // the first one
  size_t traceparents = 0;       // how many traceparent fields (header lines) there were
  const std::string_view* tracestate = nullptr;  // every tracestate line, in order
  size_t tracestates = 0;
  const std::string_view* baggage = nullptr;
  size_t baggages = 0;
};

// Applies the request's headers to tx (just begun: its own ids in place).
void accept_context(Transaction* tx, const InboundContext& in);

// What an outbound call sends (views into the transaction: valid while it is open).
struct OutboundContext {
  uint8_t trace_id[16];
  uint8_t flags = 0;
  std::string_view tracestate, baggage;
};
// False when tx is null.
bool outbound_context(Transaction* tx, OutboundContext* out);

// The flags the agent gives a trace it starts: random, and sampled when its head sampling keeps
// trace_id (the same test transport/sampler.cpp makes: the low 56 bits against rate * 2^56).
uint8_t own_trace_flags(const uint8_t trace_id[16], double sample_rate);

// Upper bounds of what the agent inserts.
// HTTP/1: "traceparent: <55>\r\n" [+ "tracestate: <ts>\r\n"] [+ "baggage: <b>\r\n"]
inline constexpr size_t kMaxContextLines = 13 + kTraceParentLen + 2 + 12 + kMaxTraceState + 2 + 9 + kMaxBaggage + 2;
// HTTP/2 HPACK literals (never indexed: new name), lengths with up to 3 bytes of integer.
inline constexpr size_t kMaxContextFields = (2 + 11 + 1 + kTraceParentLen) + (2 + 10 + 3 + kMaxTraceState) +
                                            (2 + 7 + 3 + kMaxBaggage);

// The HTTP/1 header lines for a call with span id `span` into out; their length (0: no room). Leaves out
// tracestate / baggage when empty or when `skip` says the program wrote its own (bits: 1 tracestate,
// 2 baggage).
// kOwnTraceParent (HTTP/2 only): the program wrote its own traceparent (a runtime shim naming the call's
// span): only tracestate and baggage are written, 0 when neither is to be.
enum : unsigned { kOwnTraceState = 1, kOwnBaggage = 2, kOwnTraceParent = 4 };
size_t format_context_lines(const OutboundContext& c, uint64_t span, unsigned skip, char* out, size_t cap);
// The same as HPACK "literal header field without indexing — new name" representations (RFC 7541
// §6.2.2), lowercase names as HTTP/2 requires.
size_t hpack_context(const OutboundContext& c, uint64_t span, unsigned skip, char* out, size_t cap);

}  // namespace txray
