// Edits to the bytes a program writes to an HTTP/2 connection, without the program noticing: for each
// HEADERS frame that gets a traceparent field, the program's bytes [frame start, insertion point) are
// sent as a replacement R = (the frame header with its length grown by the field) + (the program's bytes
// after the 3 length bytes, up to the insertion point) + (the field). The program's later bytes follow
// unchanged.
//
// Byte accounting (as HeaderInjector, http_inject.h, does for HTTP/1.x): the kernel's count of accepted
// wire bytes is mapped back to a count of the program's bytes, which is what the write hook returns.
// Once any byte of a replacement is accepted, the whole of it is committed: what the kernel did not take
// becomes pending, sent first by the next write on the connection, and the program is told that its
// bytes up to the insertion point were written. The insertion point is before the frame's last field
// (h2_client.h), so the program still has bytes of that frame to write and always writes again. When
// only pending bytes went out, the glue writes again at once (blocking: it blocks as the program
// expects; non-blocking: EAGAIN, true for the program's bytes).
//
// Pure arithmetic on caller-provided buffers: no I/O; the replacements are kept in this object.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace txray {

class H2Injector {
 public:
  static constexpr size_t kMaxEdits = 32;
  static constexpr size_t kMaxReplace = 1024;  // larger pseudo-header sections get no field
  static constexpr size_t kMaxField = 1664;  // >= tracecontext/context.h kMaxContextFields

  bool has_pending() const { return pending_len_ != 0; }
  size_t edits() const { return edits_; }
  void clear() { pending_len_ = 0; edits_ = 0; }

  // Starts a new write: forgets the edits of the last one (pending bytes are kept).
  void begin() { edits_ = 0; }
  // Adds an edit (in increasing program offsets, not overlapping): the program's bytes [frame_at, at),
  // `prog` holding them, become frame header with length frame_len + field_len, the rest of prog, then
  // field. False when it does not fit (too large, too many, out of order): then it is not made.
  bool add(size_t frame_at, size_t at, const char* prog, uint32_t frame_len, const char* field, size_t field_len,
           uint32_t tag);

  // Lays out pending bytes and the program's iovecs (cnt entries) with the edits into out, which holds
  // at least cnt + 2 * edits + 1 entries. Returns the entry count.
  int gather(const iovec* prog, int cnt, iovec* out);
  size_t max_out(int cnt) const { return size_t(cnt) + 2 * edits_ + 1; }

  // Accounts for `accepted` wire bytes of the last gather; returns how many were the program's. The
  // tags of the edits committed by it (sent or pending) are put in tags[], their count in *ntags.
  size_t commit(size_t accepted, uint32_t* tags, size_t* ntags);

 private:
  struct Edit {
    size_t at;       // program offset of the replaced bytes
    size_t len;      // how many program bytes it replaces
    size_t rlen;     // replacement length
    uint32_t tag;
    char r[kMaxReplace + kMaxField];
  };
  Edit edit_[kMaxEdits];
  size_t edits_ = 0;
  char pending_[kMaxReplace + kMaxField];
  size_t pending_len_ = 0;
  size_t prog_len_ = 0;  // program bytes of the last gather
};

// The same edits for a write that must be made whole from one buffer of the agent's: OpenSSL wants a
// write that failed (WANT_WRITE/WANT_READ) retried with the same buffer and length, so the program's
// plaintext with the fields in place (W) is laid out once, kept unchanged at the same address and
// written to its end, however many calls that takes (ssl_hooks.cpp: h2_tls_write). The program is told
// its own count only when all of W went out. Growth is bounded by `room` (the caller keeps W within the
// TLS records the program's bytes need). Pure: no I/O.
class H2WholeWrite {
 public:
  static constexpr size_t kMaxEdits = H2Injector::kMaxEdits;

  // Starts laying out the program's bytes prog[0, num), which may grow by `room` bytes at most.
  void begin(const char* prog, size_t num, size_t room);
  // A field at program offset `at`, inside the HEADERS frame that starts at frame_at (payload length
  // frame_len as the program wrote it), in increasing order. False (not added) when it does not fit in
  // the room left, is out of order or too many.
  bool add(size_t frame_at, size_t at, uint32_t frame_len, const char* field, size_t field_len, uint32_t tag);
  // Ends the layout (the program's bytes after the last field): true when W holds a field, and is then
  // pending until written.
  bool finish();

  bool pending() const { return pending_; }
  // What is left of W to write: the same address on every retry.
  const char* rest() const { return wire_.data() + off_; }
  size_t rest_len() const { return wire_.size() - off_; }
  // n bytes of W were taken: true when W is all written (no longer pending).
  bool wrote(size_t n);
  size_t program_len() const { return prog_len_; }
  size_t edits() const { return n_; }
  uint32_t tag(size_t i) const { return tags_[i]; }
  const std::string& wire() const { return wire_; }

 private:
  std::string wire_;
  const char* prog_ = nullptr;
  size_t prog_len_ = 0;
  size_t pos_ = 0;   // program bytes laid out so far
  size_t room_ = 0;
  size_t off_ = 0;   // bytes of W written
  bool pending_ = false;
  uint32_t tags_[kMaxEdits];
  size_t n_ = 0;
};

}  // namespace txray
