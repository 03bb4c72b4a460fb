// The hint board: a table in the runtime shim's own memory, one slot per outbound socket descriptor,
// where the shim names the request that the next request written on that socket belongs to. It replaces
// one `O` hint (a write() call through the runtime's file API, ~0.7 µs in Node.js) per outbound call with
// two plain memory stores; the agent reads and clears the slot when the request's first bytes are written
// on that socket, on the same thread (http_out::write_through).
//
// The shim registers it with the hint `B<slots>` written with the board itself as the buffer:
//   bytes [0, 32)            the message, then the agent's reply ("OK" / "NO")
//   bytes [32, 32 + 8*slots) slot fd: int32 inbound fd, int32 n (native byte order)
//     n > 0   the n-th request on inbound connection fd
//     n < 0   nobody's (the call is made outside any request): it goes to the unattributed steps
//     n = 0   empty: the agent's other rules decide
// and withdraws it with `U` before its memory can go (Node.js: the process's 'exit' event). A board is
// per thread: each JavaScript realm (main thread, each worker) has its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/attribution.h"

namespace txray::hint::board {

constexpr size_t kHeader = 32;
constexpr uint32_t kMaxSlots = 1u << 20;

// Takes the board at base (n bytes, slots slots) for the calling thread. False when it does not fit.
bool attach(void* base, size_t n, uint32_t slots);
void detach();

// True when the calling thread's board names an owner for outbound socket fd; *out is then that request
// (a ReqRef that resolves to nothing when the request is over or nobody's), and the slot is emptied.
bool take(int fd, ReqRef* out);

// The socket fd is closed: its slot is emptied.
void clear(int fd);

}  // namespace txray::hint::board
