// Outbound HTTP/2 calls that a runtime shim names by their span: which inbound request a gRPC server's
// own call belongs to, whichever thread writes its HEADERS (docs/http2.md, "Which request a call belongs
// to"; the Python grpcio shim in agent/runtimes/python/_txray_grpc.py).
//
// gRPC's C core writes a stream's HEADERS from whichever thread holds the transport's lock, so the
// writing thread says nothing about the caller (http_out.h: h2_call_tx). What does: the caller's own
// context, carried with the call. A handler knows its inbound request by the `traceparent` its caller
// sent (grpcio: context.invocation_metadata()); the agent knows the same request by its parent span id.
//   1. the shim says `S` once (hint_protocol.h): from then on inbound HTTP/2 streams that carry a caller
//      traceparent are indexed by that caller span P (request_began / request_ended);
//   2. in a handler, before an outbound call, the shim asks `S<P>`: the agent makes a new span id S,
//      remembers "S belongs to the request whose caller span is P" and answers S (name_span). The shim
//      puts `traceparent: 00-<trace>-<S>-01` into the call's metadata (the agent inserts no second one);
//   3. when that call's HEADERS frame is written, by any thread, the agent reads S from it (H2Call's
//      span_id) and files the row under that request (take); the callee's parent span is S = the row's id.
//
// Never a wrong request: an entry names one request by pointer and holds a reference on it; a caller
// span shared by two requests in flight names neither (from then until both have ended); a request's
// entries go when it ends (before tx::end), so a call written after that finds nothing and is
// unattributed as before; a span is taken once. Bounded: kSlots entries at most, a request or span that
// finds the table full is not indexed (counted). A request taken here is recorded into from other
// threads: request_began marks it `mt` (its lock is taken) and `flat` before any other thread can see it.
//
// All of it is off (one relaxed load per inbound stream) until a shim says `S`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace txray {

struct Transaction;

namespace span_owner {

constexpr size_t kSlots = 4096;      // hash slots
constexpr size_t kMaxEntries = 2048;  // entries at most (load factor 1/2)

// A shim will name spans: index requests from now on.
void enable();
bool enabled();

// An inbound HTTP/2 stream's transaction t began, with its caller's span in t->parent_span_id. True when
// it was indexed: then request_ended(t) must be called before it ends. Marks t mt and flat.
bool request_began(Transaction* t);
// The indexed request t is about to end (before tx::end): forgets it and every span named for it.
void request_ended(Transaction* t);

// `S<parent>`: a new span id for the request in flight whose caller span is `parent`, or 0 (none, more
// than one, table full).
uint64_t name_span(uint64_t parent);

// An outbound request's HEADERS carries span: the request that span was named for, with a reference
// the caller owns (give it back with release()), or nullptr. The span is forgotten either way.
Transaction* take(uint64_t span);
void release(Transaction* t);

// The tracestate and baggage of the request `span` was named for (copied under the table's lock; the
// entry's reference keeps the transaction alive meanwhile): for a shim that writes the traceparent
// itself, whose call must carry the rest of its request's context too. False when span is not known.
bool span_context(uint64_t span, std::string* tracestate, std::string* baggage);

// The current fork generation (1, 2, …): a reference taken in another generation is the parent
// process's (StepRef::held).
uint32_t generation();
// In a forked child: the parent's entries are forgotten (never released nor ended here).
void after_fork_child();

// For tests and the docs' figures.
struct Stats {
  uint64_t requests = 0;      // requests indexed
  uint64_t ambiguous = 0;     // requests whose caller span was already in flight
  uint64_t named = 0;         // spans named
  uint64_t unknown = 0;       // `S<P>` with no request for P
  uint64_t taken = 0;         // calls filed under their request
  uint64_t expired = 0;       // spans forgotten because their request ended first
  uint64_t full = 0;          // refused: table full or busy
  size_t entries = 0;         // entries now
};
Stats stats();

}  // namespace span_owner
}  // namespace txray
