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
// With `B<slots>:<list>` the board goes on past the slots with an owner list, for drivers that write the
// commands of several requests in one write (node-redis pipelines every command issued in one tick):
//   16 bytes                 int32 outbound fd, int32 count, uint32 first, int32 0
//   8 * list bytes           count entries {int32 inbound fd, int32 n} as in a slot (n = 0: not named)
// entry i names the owner of command first + i on that socket (commands counted from the connection's
// first, by the shim as it hands them to the socket and by the agent's protocol client as it reads
// them). The agent takes the list (count back to 0) at the socket's next write; a command whose number
// the list does not hold keeps the connection's other rules.
// It withdraws the board with `U` before its memory can go (Node.js: the process's 'exit' event). A board is
// per thread: each JavaScript realm (main thread, each worker) has its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/attribution.h"
#include "core/fd_table.h"

namespace txray::hint::board {

constexpr size_t kHeader = 32;
constexpr uint32_t kMaxSlots = 1u << 20;
constexpr size_t kListHeader = 16;
constexpr uint32_t kMaxList = 1024;

// Takes the board at base (n bytes, slots slots, then list owner entries, 0: none) for the calling thread.
// False when it does not fit.
bool attach(void* base, size_t n, uint32_t slots, uint32_t list = 0);
void detach();

// True when the calling thread's board names an owner for outbound socket fd; *out is then that request
// (a ReqRef that resolves to nothing when the request is over or nobody's), and the slot is emptied.
bool take(int fd, ReqRef* out);

// How many owners the calling thread's board lists for the socket whose slot is `slot` (0: none, or a
// list that does not hold together), with *first the number of the command the first names. Then
// list_owner(i) for i below that (requests resolved as take() does; a ReqRef with fd -1 for an entry
// that names none), and list_taken() to empty the list.
size_t listed(const FdSlot* slot, uint32_t* first);
ReqRef list_owner(size_t i);
void list_taken();
// All three at once: up to cap owners into out (*first: the number of the command out[0] names), the list
// emptied; returns how many. What the dispatch hands a protocol client at a socket's write.
size_t take_list(const FdSlot* slot, ReqRef* out, size_t cap, uint32_t* first);

// The socket fd is closed: its slot is emptied (and the owner list, if it is fd's).
void clear(int fd);

}  // namespace txray::hint::board
