#include "protocols/fastcgi/splice.h"

#include <cstring>

namespace txray {

bool Splicer::add(size_t at, size_t len, const char* r, size_t rlen, uint32_t tag) {
  if (edits_ >= kMaxEdits || rlen > kMaxReplace || rlen == 0) return false;
  if (edits_ && at < edit_[edits_ - 1].at + edit_[edits_ - 1].len) return false;
  if (edits_ && at == edit_[edits_ - 1].at && len == 0 && edit_[edits_ - 1].len == 0) return false;
  Edit& e = edit_[edits_++];
  e.at = at;
  e.len = len;
  e.rlen = rlen;
  e.tag = tag;
  std::memcpy(e.r, r, rlen);
  return true;
}

int Splicer::gather(const iovec* prog, int cnt, iovec* out) {
  int k = 0;
  if (pending_len_) out[k++] = {pending_, pending_len_};
  size_t off = 0;   // program offset of prog[i]
  size_t skip = 0;  // program bytes before this offset are replaced (or already laid out)
  size_t e = 0;
  for (int i = 0; i < cnt; ++i) {
    size_t len = prog[i].iov_len;
    char* base = static_cast<char*>(prog[i].iov_base);
    size_t cur = skip > off ? skip : off;
    // An edit at this iovec's end (len 0, an insertion) waits for the next one: the program's bytes that
    // follow it are there, and there is no edit without bytes after it.
    while (e < edits_ && edit_[e].at < off + len && edit_[e].at + edit_[e].len <= off + len) {
      if (edit_[e].at > cur) out[k++] = {base + (cur - off), edit_[e].at - cur};
      out[k++] = {edit_[e].r, edit_[e].rlen};
      cur = skip = edit_[e].at + edit_[e].len;
      ++e;
    }
    if (e < edits_ && edit_[e].at < off + len) {
      // The replaced bytes go on in the next iovec: this edit and the later ones are not made.
      edits_ = e;
    }
    if (cur < off + len) out[k++] = {base + (cur - off), off + len - cur};
    off += len;
  }
  prog_len_ = off;
  edits_ = e;  // edits beyond the program's bytes are not made
  return k;
}

size_t Splicer::commit(size_t accepted, uint32_t* tags, size_t* ntags) {
  *ntags = 0;
  size_t p = accepted < pending_len_ ? accepted : pending_len_;
  if (p) {
    std::memmove(pending_, pending_ + p, pending_len_ - p);
    pending_len_ -= p;
    accepted -= p;
  }
  if (pending_len_) return 0;
  size_t cur = 0;
  for (size_t i = 0; i < edits_; ++i) {
    const Edit& e = edit_[i];
    size_t plain = e.at - cur;
    if (accepted < plain) return cur + accepted;
    accepted -= plain;
    cur = e.at;
    if (accepted == 0) return cur;
    tags[(*ntags)++] = e.tag;
    size_t l = accepted < e.rlen ? accepted : e.rlen;
    accepted -= l;
    if (l < e.rlen) {
      pending_len_ = e.rlen - l;
      std::memcpy(pending_, e.r + l, pending_len_);
      return e.at + e.len;
    }
    cur = e.at + e.len;
  }
  size_t rest = prog_len_ - cur;
  return cur + (accepted < rest ? accepted : rest);
}

}  // namespace txray
