// Per-descriptor state, indexed by fd. Chunks of slots are allocated on first use and never freed, and
// a slot is reused when its fd number is, so a close racing with a read on another thread can never
// touch freed memory (at worst it counts bytes against the wrong socket).
//
// The hot path (a read/write on a descriptor the agent does not care about) is peek(): two loads and a
// compare.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/recorder.h"

namespace txray {

struct HttpConn;        // http_conn.h
struct HttpClientConn;  // http_out.cpp (outbound HTTP, the RPC layer)

enum class FdKind : uint8_t {
  none = 0,
  inbound = 1,   // accepted connection, watched for HTTP requests
  outbound = 2,  // connected by the program (AF_INET/AF_INET6): bytes counted, SOCKET_CLOSE at close
  agent = 3,     // owned by the agent (its collector connection): the program cannot close or dup2 over it
};

struct FdSlot {
  std::atomic<FdKind> kind{FdKind::none};
  // Byte counters: written only by the thread using the socket; plain relaxed load+store, no RMW.
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> bytes_written{0};
  uint64_t uid = 0;                       // socket uid (ties SOCKET and SOCKET_CLOSE)
  // A non-blocking connect still in progress (EINPROGRESS): its SOCKET row gets its real elapsed time
  // at the first byte in or out, or its error (SO_ERROR) when the socket is closed first.
  std::atomic<bool> connecting{false};
  StepRef connect_step;
  // The request that was handled when the program connected this socket (attribution.h: ReqRef):
  // its SOCKET_CLOSE goes there while it is in flight.
  int32_t owner_fd = -1;
  uint64_t owner_txid = 0;
  std::atomic<HttpConn*> conn{nullptr};   // inbound: allocated once per slot, reused
  std::atomic<HttpClientConn*> client{nullptr};  // outbound HTTP state (http_out.h), allocated likewise
  // Outbound: `client` follows this connection's bytes. False once it turned out not to be HTTP (and no
  // inserted header is pending): its reads and writes then skip http_out altogether (http_out.h).
  std::atomic<bool> http_live{false};
  // Outbound over a Unix socket: followed only when it speaks a wire protocol (a database driver's
  // socket), and without SOCKET / SOCKET_CLOSE rows — a program's local sockets (logging, D-Bus, nscd)
  // are not its calls. Let go (kind none) at its first bytes otherwise.
  bool quiet = false;

  void add_read(uint64_t n) { bytes_read.store(bytes_read.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void add_written(uint64_t n) {
    bytes_written.store(bytes_written.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

namespace fds {

constexpr int kChunkBits = 10;
constexpr int kChunks = 4096;  // 4 M descriptors

extern std::atomic<FdSlot*> g_chunks[kChunks];
extern std::atomic<int> g_chunks_used;  // 1 + the highest chunk index ever allocated (walks stop there)
extern std::atomic<int> g_max_fd;       // the highest descriptor ever given a slot (walks stop there too)

// The slot of fd if its chunk exists, else nullptr. Never allocates.
inline FdSlot* peek(int fd) {
  if (__builtin_expect(fd < 0 || fd >= (kChunks << kChunkBits), 0)) return nullptr;
  FdSlot* chunk = g_chunks[fd >> kChunkBits].load(std::memory_order_acquire);
  return chunk ? &chunk[fd & ((1 << kChunkBits) - 1)] : nullptr;
}

// The slot of fd, allocating its chunk if needed; nullptr when fd is out of range or out of memory.
FdSlot* get(int fd);

// Kind of fd (none when never seen).
inline FdKind kind_of(int fd) {
  FdSlot* s = peek(fd);
  return s ? s->kind.load(std::memory_order_relaxed) : FdKind::none;
}

// Marks fd as the agent's own (agent/transport/own_fd.h holds and releases them).
void mark_agent(int fd);

// When the agent's descriptor lives in the program's table: between the agent thread's socket() and
// the move of that socket to the top of the table, the number it got is unmarked. The program's close,
// close_range, closefrom, dup2 and dup3 hooks call note_program_close(lo, hi) first with the numbers they
// close, so that the agent can tell whether its number may have changed hands meanwhile.
extern std::atomic<uint32_t> g_agent_opening;
extern std::atomic<int> g_closed_lo;  // the lowest and highest number closed while g_agent_opening
extern std::atomic<int> g_closed_hi;
inline void note_program_close(int lo, int hi) {
  if (__builtin_expect(g_agent_opening.load(std::memory_order_seq_cst) == 0, 1)) return;
  for (int cur = g_closed_lo.load(); lo < cur && !g_closed_lo.compare_exchange_weak(cur, lo);) {
  }
  for (int cur = g_closed_hi.load(); hi > cur && !g_closed_hi.compare_exchange_weak(cur, hi);) {
  }
}

// Calls fn(fd, slot) for every slot whose kind is not none (fork handling, close_range).
template <typename Fn>
void for_each_used(int first, int last, Fn fn) {
  if (first < 0) first = 0;
  if (int max = g_max_fd.load(std::memory_order_acquire); last > max) last = max;
  int used = g_chunks_used.load(std::memory_order_acquire);
  for (int c = first >> kChunkBits; c < used && (c << kChunkBits) <= last; ++c) {
    FdSlot* chunk = g_chunks[c].load(std::memory_order_acquire);
    if (!chunk) continue;
    for (int i = 0; i < (1 << kChunkBits); ++i) {
      int fd = (c << kChunkBits) + i;
      if (fd < first || fd > last) continue;
      if (chunk[i].kind.load(std::memory_order_relaxed) != FdKind::none) fn(fd, chunk[i]);
    }
  }
}

}  // namespace fds
}  // namespace txray
