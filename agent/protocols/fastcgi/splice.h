// Edits to the bytes a program writes to a gateway connection (FastCGI, uwsgi), without the program
// noticing: each edit replaces the program's bytes [at, at + len) by its own bytes R (len may be 0: a
// pure insertion). FastCGI inserts a PARAMS record before a request's first one (len 0); uwsgi replaces
// a packet's 4-byte header by the header with its datasize grown, followed by the inserted vars.
//
// Byte accounting (as H2Injector, h2_inject.h): the kernel's count of accepted wire bytes is mapped back
// to a count of the program's bytes, which is what the write hook returns. Once any byte of R is
// accepted, the whole edit is committed: what the kernel did not take of R becomes pending, sent first by
// the next write on the connection, and the program is told that its bytes up to at + len were written.
// An edit is only planned where the program has bytes after at + len in the same request (the record or
// vars the edit comes before), so it always writes again. When only pending bytes went out, the glue
// writes again at once (blocking: it blocks as the program expects; non-blocking: EAGAIN, true for the
// program's bytes).
//
// Pure arithmetic on caller-provided buffers: no I/O; the replacements are kept in this object.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace txray {

class Splicer {
 public:
  static constexpr size_t kMaxEdits = 8;
  static constexpr size_t kMaxReplace = 2048;  // >= the trace context's largest encoding + a header

  bool has_pending() const { return pending_len_ != 0; }
  size_t edits() const { return edits_; }
  void clear() {
    pending_len_ = 0;
    edits_ = 0;
  }
  // Starts a new write: forgets the edits of the last one (pending bytes are kept).
  void begin() { edits_ = 0; }
  // Adds an edit, in increasing program offsets, not overlapping. False (not made) when it does not fit.
  bool add(size_t at, size_t len, const char* r, size_t rlen, uint32_t tag);
  // Lays out pending bytes and the program's iovecs with the edits into out (room for max_out(cnt)
  // entries). Returns the entry count.
  int gather(const iovec* prog, int cnt, iovec* out);
  static constexpr size_t max_out(int cnt) { return size_t(cnt) + 2 * kMaxEdits + 1; }
  // Accounts for `accepted` wire bytes of the last gather; returns how many were the program's. The tags
  // of the edits it committed (sent whole or pending) go to tags[], their count to *ntags.
  size_t commit(size_t accepted, uint32_t* tags, size_t* ntags);

 private:
  struct Edit {
    size_t at, len, rlen;
    uint32_t tag;
    char r[kMaxReplace];
  };
  Edit edit_[kMaxEdits];
  size_t edits_ = 0;
  char pending_[kMaxReplace];
  size_t pending_len_ = 0;
  size_t prog_len_ = 0;  // program bytes of the last gather
};

}  // namespace txray
