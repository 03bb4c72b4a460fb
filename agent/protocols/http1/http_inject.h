// Inserting a header line into the bytes a program writes to a socket, without the program noticing.
//
// The program offers n bytes; the wire gets  pending + prog[0:at] + line + prog[at:n]  (pending: bytes of
// an earlier inserted line the kernel did not take yet). The kernel's count of accepted wire bytes is
// mapped back to the count of the program's own bytes, which is what the hook returns, so that the
// program's byte counts and return values are exactly what they would be without the agent:
// - once prog[0:at] is accepted, the whole line is committed: what the kernel did not take of it
//   becomes pending and goes out first on the next write (the program always writes again: `at` is
//   inside a request head, whose blank line is still to come);
// - when only pending bytes went out (0 program bytes), the glue writes again at once: a blocking
//   socket then blocks as the program expects, a non-blocking one returns EAGAIN (-1), which is true
//   for the program's bytes.
// Pure arithmetic on caller-provided buffers: no I/O, no allocation.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace txray {

class HeaderInjector {
 public:
  static constexpr size_t kNoInsert = static_cast<size_t>(-1);
  // Room for traceparent + tracestate + baggage lines (tracecontext/context.h: kMaxContextLines).
  static constexpr size_t kMaxLine = 1664;
  static constexpr int kExtraIov = 3;  // gather() adds at most this many entries to the program's

  bool has_pending() const { return pending_len_ != 0; }
  size_t pending_bytes() const { return pending_len_; }
  void clear() { pending_len_ = 0; }

  // Lays out pending bytes, the program's iovecs (total `n` bytes) and `line` inserted at program offset
  // `at` (kNoInsert: none) into out, which holds iovcnt + kExtraIov entries. Returns the entry count.
  // The line is copied; out points into this object and into the program's buffers.
  int gather(const iovec* prog, int iovcnt, size_t at, std::string_view line, iovec* out);

  // Accounts for `accepted` wire bytes of the last gather; returns how many of them were the program's.
  size_t commit(size_t accepted);

  // True when the last commit() committed the inserted line (it is sent or pending).
  bool inserted() const { return inserted_; }

 private:
  char pending_[kMaxLine];
  size_t pending_len_ = 0;
  char line_[kMaxLine];
  size_t line_len_ = 0;
  size_t at_ = kNoInsert;  // program offset of the insertion of the last gather
  size_t prog_len_ = 0;
  bool inserted_ = false;
};

// "traceparent: 00-<trace>-<span>-01\r\n" (70 bytes) into out; returns its length.
size_t format_traceparent_line(const uint8_t trace_id[16], uint64_t span_id, char* out, size_t cap);

}  // namespace txray
