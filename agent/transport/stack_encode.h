// Stacks on the wire: raw addresses (stack_capture.h) -> symbolized txray.v1.Stack / Frame messages.
// For the transport thread (or the exiting thread that sends in its place): it symbolizes with the
// agent's one Symbolizer (agent/symbolize/), serialized by a lock of its own.
#pragma once

#include <cstdint>

#include "symbolize/symbolizer.h"
#include "transport/pb_writer.h"

namespace txray::wire {

// Writes a txray.v1.Frame as field `field` of the message being written.
void write_frame(pb::Writer& w, int field, const sym::Frame& f);

// Symbolizes ips[0..n) (return addresses, innermost first) and writes them as a txray.v1.Stack, field
// `field` of the message being written. Nothing when n == 0.
void write_stack(pb::Writer& w, int field, const uintptr_t* ips, uint32_t n);

// Symbolizes one address with the agent's symbolizer (serialized like write_stack).
sym::Frame symbolize(uintptr_t ip, bool return_address = true);

// The same, waiting at most ~50 ms for the lock (a forked child can hold a copy locked by the parent's
// agent thread forever): false, and *out untouched, when it could not be had. For CPU samples.
bool try_symbolize(uintptr_t ip, bool return_address, sym::Frame* out);

}  // namespace txray::wire
