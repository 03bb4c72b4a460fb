// The runtime hint protocol: how a shim inside a language runtime (agent/runtimes/: Node.js, Python)
// tells the agent which request the code running now works for. docs/agent.md ("Runtime hints") is
// the reference; in short, the shim calls libc write() on the reserved descriptor number kHintFd with
// a writable 32-byte buffer holding an ASCII message (up to the first NUL); the agent's write hook
// takes it without a system call and writes its ASCII reply into the same buffer.
//
//   H<runtime>              hello: this thread's runtime gives hints (no handler-window guessing)
//   R<fd>[:<n>]             the request (n-th on inbound connection fd) started: reply its token
//   E<fd>[:<token>]  / L    enter that request on this thread / leave
//   O<outfd>:<fd>:<token>   the next request written on outbound socket outfd belongs to that request
//   C[<fd>:<token>]         capture that request (or the thread's) for another thread: reply a handle
//   A<handle> / D<handle>   attach the capture on this thread / detach and release it
//   B<slots>[:<list>]       the buffer written is this thread's hint board (hint_board.h): outbound
//                           sockets' owners set by plain memory stores instead of O hints; with list,
//                           room for that many owners of the commands of one pipelined write
//   U                       the board goes away
//   S                       a shim will name outbound calls' spans: index requests by caller span
//   S<parent>               a new span id for the request whose caller span is parent (span_owner.h)
//
// Tokens and handles are 16 lowercase hex digits ("0000000000000000": none). The parser is pure (no
// state, no allocation) and fuzzed (tests/agent/fuzz/fuzz_hint_protocol.cpp); apply() does what a parsed
// message says.
#pragma once

#include <cstddef>
#include <cstdint>

namespace txray::hint {

// A descriptor number no kernel hands out (above fs.nr_open's ceiling), valid as an int32 for the
// runtimes' write functions.
constexpr int kHintFd = 2147483600;
constexpr size_t kBufferSize = 32;

struct Message {
  char op = 0;            // 'H' 'R' 'E' 'L' 'O' 'C' 'A' 'D' 'B' 'U' 'S'
  int32_t fd = -1;        // R E C: the inbound connection; O: the outbound socket
  int32_t req_fd = -1;    // O: the inbound connection
  uint32_t n = 0;         // R: the request's number on its connection (0 = the one in flight); B: slots
  uint32_t list = 0;      // B: the owner list's entries (0: no list)
  uint64_t token = 0;     // E O C: the request's txid (0 = the one in flight); A D: the handle;
                          // S: the caller span (0: S alone)
};

// Parses the message in buf[0, len) (it ends at the first NUL). False when malformed.
bool parse(const char* buf, size_t len, Message* out);

// Does what m says for the calling thread and writes the NUL-terminated reply into reply[0, cap) (the
// buffer the message came in: for B, the board itself).
// Returns false when the message could not be applied as asked (reply "NO" or a zero token).
bool apply(const Message& m, char* reply, size_t cap);

}  // namespace txray::hint
