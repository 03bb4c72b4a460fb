#include "protocols/http2/h2_inject.h"

#include <cstring>

namespace txray {

bool H2Injector::add(size_t frame_at, size_t at, const char* prog, uint32_t frame_len, const char* field,
                     size_t field_len, uint32_t tag) {
  if (edits_ >= kMaxEdits || at < frame_at + 9 || at - frame_at > kMaxReplace || field_len > kMaxField) return false;
  if (edits_ && frame_at < edit_[edits_ - 1].at + edit_[edits_ - 1].len) return false;
  uint32_t grown = frame_len + uint32_t(field_len);
  if (grown > 0xffffff) return false;
  Edit& e = edit_[edits_];
  e.at = frame_at;
  e.len = at - frame_at;
  e.tag = tag;
  std::memcpy(e.r, prog, e.len);
  e.r[0] = char(grown >> 16);
  e.r[1] = char(grown >> 8);
  e.r[2] = char(grown);
  std::memcpy(e.r + e.len, field, field_len);
  e.rlen = e.len + field_len;
  ++edits_;
  return true;
}

int H2Injector::gather(const iovec* prog, int cnt, iovec* out) {
  int k = 0;
  if (pending_len_) out[k++] = {pending_, pending_len_};
  size_t off = 0;      // program offset of prog[i]
  size_t skip = 0;     // program bytes before this offset are replaced (or already laid out)
  size_t e = 0;
  for (int i = 0; i < cnt; ++i) {
    size_t len = prog[i].iov_len;
    char* base = static_cast<char*>(prog[i].iov_base);
    size_t cur = skip > off ? skip : off;
    while (e < edits_ && edit_[e].at < off + len) {
      if (edit_[e].at > cur) out[k++] = {base + (cur - off), edit_[e].at - cur};
      out[k++] = {edit_[e].r, edit_[e].rlen};
      cur = skip = edit_[e].at + edit_[e].len;
      ++e;
      if (cur >= off + len) break;
    }
    if (cur < off + len) out[k++] = {base + (cur - off), off + len - cur};
    off += len;
  }
  prog_len_ = off;
  edits_ = e;  // edits beyond the program's bytes are not made
  return k;
}

size_t H2Injector::commit(size_t accepted, uint32_t* tags, size_t* ntags) {
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

void H2WholeWrite::begin(const char* prog, size_t num, size_t room) {
  wire_.clear();
  prog_ = prog;
  prog_len_ = num;
  pos_ = 0;
  room_ = room;
  off_ = 0;
  pending_ = false;
  n_ = 0;
}

bool H2WholeWrite::add(size_t frame_at, size_t at, uint32_t frame_len, const char* field, size_t field_len,
                       uint32_t tag) {
  if (n_ >= kMaxEdits || frame_at < pos_ || at < frame_at + 9 || at > prog_len_ || field_len > room_) return false;
  uint32_t grown = frame_len + uint32_t(field_len);
  if (field_len > H2Injector::kMaxField || grown > 0xffffff) return false;
  wire_.append(prog_ + pos_, frame_at - pos_);
  size_t hdr = wire_.size();
  wire_.append(prog_ + frame_at, at - frame_at);
  wire_[hdr] = char(grown >> 16);  // the frame's 24-bit length, grown by the field
  wire_[hdr + 1] = char(grown >> 8);
  wire_[hdr + 2] = char(grown);
  wire_.append(field, field_len);
  pos_ = at;
  room_ -= field_len;
  tags_[n_++] = tag;
  return true;
}

bool H2WholeWrite::finish() {
  if (n_ == 0) return false;
  wire_.append(prog_ + pos_, prog_len_ - pos_);
  prog_ = nullptr;
  off_ = 0;
  pending_ = true;
  return true;
}

bool H2WholeWrite::wrote(size_t n) {
  off_ += n < rest_len() ? n : rest_len();
  if (off_ == wire_.size()) pending_ = false;
  return !pending_;
}

}  // namespace txray
