#include "protocols/http2/h2_frames.h"

#include <nghttp2/nghttp2.h>

#include <cstring>

namespace txray::h2 {

int match_preface(const char* p, size_t n) {
  size_t k = n < kPreface.size() ? n : kPreface.size();
  if (std::memcmp(p, kPreface.data(), k) != 0) return -1;
  return k == kPreface.size() ? 1 : 0;
}

std::string_view HeaderList::get(std::string_view name) const {
  for (const Field& f : fields)
    if (f.name == name) return f.value;
  return {};
}

bool HeaderList::has(std::string_view name) const {
  for (const Field& f : fields)
    if (f.name == name) return true;
  return false;
}

FrameReader::~FrameReader() {
  if (inflater_) nghttp2_hd_inflate_del(inflater_);
}

void FrameReader::reset(bool preface) {
  if (inflater_) nghttp2_hd_inflate_del(inflater_);
  inflater_ = nullptr;
  state_ = nghttp2_hd_inflate_new(&inflater_) == 0 ? (preface ? State::preface : State::header) : State::dead;
  offset_ = 0;
  preface_seen_ = 0;
  hdr_len_ = 0;
  len_ = got_ = 0;
  in_block_ = false;
  block_.clear();
  block_.shrink_to_fit();
  fields_.fields.clear();
  ahead_.clear();
}

bool FrameReader::die() {
  state_ = State::dead;
  block_.clear();
  block_.shrink_to_fit();
  if (inflater_) nghttp2_hd_inflate_del(inflater_);
  inflater_ = nullptr;
  return false;
}

int64_t FrameReader::frame_remaining() const {
  if (state_ == State::header && hdr_len_ == 0) return 0;
  if (state_ == State::preface) return int64_t(kPreface.size() - preface_seen_);  // the first frame follows it
  if (state_ == State::payload) return int64_t(len_) - int64_t(got_);
  return -1;
}

size_t FrameReader::partial_header(uint8_t out[kFrameHeader]) const {
  if (state_ != State::header || hdr_len_ == 0) return 0;
  std::memcpy(out, hdr_, hdr_len_);
  return hdr_len_;
}

bool FrameReader::decode_block(const char* p, size_t n, HeaderList* out, size_t* pseudo_end) {
  out->fields.clear();
  if (!inflater_) return false;
  auto* in = reinterpret_cast<uint8_t*>(const_cast<char*>(p));
  size_t left = n;
  size_t decoded = 0;
  size_t pseudo = 0;
  bool regular_after = false;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    ssize_t rv = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
    if (rv < 0) return false;
    in += rv;
    left -= size_t(rv);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      decoded += nv.namelen + nv.valuelen;
      if (out->fields.size() >= kMaxFields || decoded > kMaxHeaderBlock) return false;
      out->fields.push_back({std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                             std::string(reinterpret_cast<char*>(nv.value), nv.valuelen)});
      if (nv.namelen && nv.name[0] == ':') {
        if (regular_after) return false;  // a pseudo-header after a regular field: malformed
        pseudo = n - left;
      } else {
        regular_after = true;
      }
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inflater_);
      break;
    }
    if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && left == 0) break;
  }
  if (pseudo_end) *pseudo_end = (pseudo && regular_after) ? pseudo : 0;
  return true;
}

bool FrameReader::decode_ahead(uint64_t at, const char* frame, size_t len, const HeaderList** fields,
                               size_t* pseudo_end) {
  if (state_ == State::dead) return false;
  for (const Ahead& a : ahead_)
    if (a.at == at) {
      *fields = &a.fields;
      *pseudo_end = a.pseudo_end;
      return true;
    }
  if (at < offset_ || (!ahead_.empty() && at < ahead_.back().at) || ahead_.size() >= kMaxAhead) return false;
  if (len < kFrameHeader) return false;
  auto* u = reinterpret_cast<const uint8_t*>(frame);
  uint32_t flen = (uint32_t(u[0]) << 16) | (uint32_t(u[1]) << 8) | u[2];
  if (u[3] != HEADERS || !(u[4] & END_HEADERS) || kFrameHeader + flen != len || flen > kMaxHeaderBlock) return false;
  size_t start = kFrameHeader, end = len;
  if (u[4] & PADDED) {
    if (flen < 1) return false;
    size_t pad = u[start++];
    if (pad > end - start) return false;
    end -= pad;
  }
  if (u[4] & PRIORITY_FLAG) start += 5;
  if (start > end) return false;
  size_t pe = 0;
  Ahead a;
  if (!decode_block(frame + start, end - start, &a.fields, &pe)) return die();
  a.at = at;
  a.pseudo_end = pe ? start + pe : 0;
  ahead_.push_back(std::move(a));
  *fields = &ahead_.back().fields;
  *pseudo_end = ahead_.back().pseudo_end;
  return true;
}

bool FrameReader::feed(const char* p, size_t n, Handler& h) {
  while (n > 0 && state_ != State::dead) {
    switch (state_) {
      case State::preface: {
        size_t k = kPreface.size() - preface_seen_;
        if (k > n) k = n;
        if (std::memcmp(p, kPreface.data() + preface_seen_, k) != 0) return die();
        preface_seen_ += k;
        p += k;
        n -= k;
        offset_ += k;
        if (preface_seen_ == kPreface.size()) state_ = State::header;
        break;
      }
      case State::header: {
        if (hdr_len_ == 0) frame_at_ = offset_;
        size_t k = kFrameHeader - hdr_len_;
        if (k > n) k = n;
        std::memcpy(hdr_ + hdr_len_, p, k);
        hdr_len_ += k;
        p += k;
        n -= k;
        offset_ += k;
        if (hdr_len_ < kFrameHeader) break;
        hdr_len_ = 0;
        len_ = (uint32_t(hdr_[0]) << 16) | (uint32_t(hdr_[1]) << 8) | hdr_[2];
        type_ = hdr_[3];
        flags_ = hdr_[4];
        stream_ = ((uint32_t(hdr_[5]) << 24) | (uint32_t(hdr_[6]) << 16) | (uint32_t(hdr_[7]) << 8) | hdr_[8]) &
                  0x7fffffffu;
        got_ = 0;
        // The framing rules a real peer keeps (RFC 9113 §6); garbage or a joined-midway stream breaks
        // one of them within a few frames.
        if (in_block_ && (type_ != CONTINUATION || stream_ != block_stream_)) return die();
        if (!in_block_ && type_ == CONTINUATION) return die();  // a CONTINUATION of nothing
        switch (type_) {
          case DATA:
          case HEADERS:
          case CONTINUATION:
            if (stream_ == 0) return die();
            break;
          case PUSH_PROMISE:
            if (stream_ == 0) return die();
            break;
          case PRIORITY:
            if (stream_ == 0 || len_ != 5) return die();
            break;
          case RST_STREAM:
            if (stream_ == 0 || len_ != 4) return die();
            break;
          case SETTINGS:
            if (stream_ != 0 || len_ % 6 != 0 || ((flags_ & ACK) && len_ != 0)) return die();
            break;
          case PING:
            if (stream_ != 0 || len_ != 8) return die();
            break;
          case GOAWAY:
            if (stream_ != 0 || len_ < 8) return die();
            break;
          case WINDOW_UPDATE:
            if (len_ != 4) return die();
            break;
          default:
            if (type_ > 0x10) return die();  // unknown extension types this far out: taken as garbage
            break;
        }
        if ((type_ == HEADERS || type_ == CONTINUATION || type_ == PUSH_PROMISE) &&
            block_.size() + len_ > kMaxHeaderBlock + 512)
          return die();
        state_ = State::payload;
        if (len_ == 0 && !frame_done(h)) return false;
        break;
      }
      case State::payload: {
        size_t k = len_ - got_;
        if (k > n) k = n;
        bool keep = type_ == HEADERS || type_ == CONTINUATION || type_ == PUSH_PROMISE;
        if (keep && !(type_ == HEADERS && !ahead_.empty() && frame_at_ == ahead_.front().at)) block_.append(p, k);
        if (type_ == RST_STREAM)
          for (size_t i = 0; i < k && got_ + i < sizeof small_; ++i) small_[got_ + i] = uint8_t(p[i]);
        got_ += uint32_t(k);
        p += k;
        n -= k;
        offset_ += k;
        if (got_ == len_ && !frame_done(h)) return false;
        break;
      }
      case State::dead:
        break;
    }
  }
  return state_ != State::dead;
}

// A frame's payload is complete (state_ == payload, got_ == len_).
bool FrameReader::frame_done(Handler& h) {
  state_ = State::header;
  switch (type_) {
    case DATA:
      h.on_data(stream_, len_, flags_ & END_STREAM);
      return true;
    case RST_STREAM:
      h.on_reset(stream_, (uint32_t(small_[0]) << 24) | (uint32_t(small_[1]) << 16) | (uint32_t(small_[2]) << 8) | small_[3]);
      return true;
    case HEADERS:
    case PUSH_PROMISE: {
      if (!ahead_.empty() && frame_at_ >= ahead_.front().at) {
        // Decoded ahead (decode_ahead): the inflater has seen this block already. A frame there that is
        // not the one decoded means the program wrote other bytes than it offered: not followed.
        if (frame_at_ != ahead_.front().at || type_ != HEADERS || !(flags_ & END_HEADERS)) return die();
        HeaderList fields = std::move(ahead_.front().fields);
        ahead_.erase(ahead_.begin());
        h.on_headers(stream_, fields, flags_ & END_STREAM, kFrameHeader + len_);
        return true;
      }
      // Strip padding and priority (HEADERS) or the promised stream id (PUSH_PROMISE).
      size_t start = 0, end = block_.size();
      if (flags_ & PADDED) {
        if (end < 1) return die();
        size_t pad = uint8_t(block_[0]);
        start = 1;
        if (pad > end - start) return die();
        end -= pad;
      }
      if (type_ == HEADERS && (flags_ & PRIORITY_FLAG)) start += 5;
      if (type_ == PUSH_PROMISE) start += 4;
      if (start > end) return die();
      block_.erase(end);
      block_.erase(0, start);
      in_block_ = true;
      block_push_ = type_ == PUSH_PROMISE;
      block_end_stream_ = type_ == HEADERS && (flags_ & END_STREAM);
      block_stream_ = stream_;
      block_wire_ = kFrameHeader + len_;
      break;
    }
    case CONTINUATION:
      block_wire_ += kFrameHeader + len_;
      break;
    default:
      return true;
  }
  if (!(flags_ & END_HEADERS)) return true;
  in_block_ = false;
  if (block_.size() > kMaxHeaderBlock) return die();
  if (!decode_block(block_.data(), block_.size(), &fields_, nullptr)) return die();
  block_.clear();
  if (block_.capacity() > 4096) block_.shrink_to_fit();
  if (!block_push_) h.on_headers(block_stream_, fields_, block_end_stream_, block_wire_);
  return true;
}

}  // namespace txray::h2
