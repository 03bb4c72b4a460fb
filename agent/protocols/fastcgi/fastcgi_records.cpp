#include "protocols/fastcgi/fastcgi_records.h"

#include <strings.h>

#include <cstring>

namespace txray::fcgi {

bool parse_header(const char* p, Header* h) {
  auto u = [&](int i) { return uint8_t(p[i]); };
  if (u(0) != 1 || u(1) < kBeginRequest || u(1) > kUnknownType) return false;
  h->type = u(1);
  h->id = uint16_t(u(2) << 8 | u(3));
  h->content = uint16_t(u(4) << 8 | u(5));
  h->padding = u(6);
  return true;
}

void put_header(char* out, uint8_t type, uint16_t id, uint16_t content, uint8_t padding) {
  out[0] = 1;
  out[1] = char(type);
  out[2] = char(id >> 8);
  out[3] = char(id);
  out[4] = char(content >> 8);
  out[5] = char(content);
  out[6] = char(padding);
  out[7] = 0;
}

int looks_like_begin(const char* p, size_t n) {
  auto u = [&](size_t i) { return uint8_t(p[i]); };
  if (n >= 1 && u(0) != 1) return -1;
  if (n >= 2 && u(1) != kBeginRequest && u(1) != kGetValues) return -1;
  if (n >= 2 && u(1) == kGetValues) {
    // management records go on request id 0
    if ((n >= 3 && u(2) != 0) || (n >= 4 && u(3) != 0)) return -1;
    return n >= kHeaderLen ? 1 : 0;
  }
  // BEGIN_REQUEST: a request id other than 0, a body of 8 bytes, role RESPONDER/AUTHORIZER/FILTER
  if (n >= 4 && u(2) == 0 && u(3) == 0) return -1;
  if ((n >= 5 && u(4) != 0) || (n >= 6 && u(5) != 8)) return -1;
  if (n >= 9 && u(8) != 0) return -1;
  if (n >= 10 && (u(9) < 1 || u(9) > 3)) return -1;
  // Decided once the role is seen, so that the answer does not depend on how the reads were split
  // (php-fpm reads the 8-byte header alone, then the body).
  return n >= kHeaderLen + 2 ? 1 : 0;
}

void RecordReader::reset() { *this = RecordReader{}; }

bool RecordReader::feed(const char* p, size_t n, Sink& sink) {
  while (n > 0 && !dead_) {
    if (!in_record_) {
      size_t take = kHeaderLen - have_ < n ? kHeaderLen - have_ : n;
      std::memcpy(hdr_ + have_, p, take);
      have_ += take;
      total_ += take;
      p += take;
      n -= take;
      if (have_ < kHeaderLen) return true;
      have_ = 0;
      if (!parse_header(hdr_, &cur_)) {
        dead_ = true;
        return false;
      }
      in_record_ = true;
      content_left_ = cur_.content;
      padding_left_ = cur_.padding;
      sink.on_header(cur_);
      if (dead_) return false;
    }
    if (content_left_) {
      size_t take = content_left_ < n ? content_left_ : n;
      content_left_ -= uint32_t(take);
      total_ += take;
      sink.on_content(cur_, p, take);
      p += take;
      n -= take;
      if (content_left_) return !dead_;
    }
    if (padding_left_) {
      size_t take = padding_left_ < n ? padding_left_ : n;
      padding_left_ -= uint32_t(take);
      total_ += take;
      p += take;
      n -= take;
      if (padding_left_) return !dead_;
    }
    in_record_ = false;
    sink.on_record_end(cur_);
  }
  // a record with no content and no padding ends with its header
  if (!dead_ && in_record_ && content_left_ == 0 && padding_left_ == 0) {
    in_record_ = false;
    sink.on_record_end(cur_);
  }
  return !dead_;
}

bool RecordReader::skip(size_t n, Sink& sink) {
  if (dead_ || !in_record_ || n == 0 || n > content_left_ || (cur_.type != kStdin && cur_.type != kData))
    return false;
  content_left_ -= uint32_t(n);
  total_ += n;
  sink.on_skipped(cur_, n);
  if (!dead_ && content_left_ == 0 && padding_left_ == 0) {
    in_record_ = false;
    sink.on_record_end(cur_);
  }
  return !dead_;
}

void NameValueReader::reset() {
  state_ = State::name_len;
  got_ = 0;
  name_len_ = value_len_ = left_ = 0;
  keep_ = truncated_ = false;
  name_.clear();
  value_.clear();
}

void NameValueReader::name_done(Sink& sink) {
  keep_ = name_len_ <= kMaxName && sink.wanted(name_);
  left_ = value_len_;
  state_ = State::value;
  if (left_ == 0) {
    if (keep_) sink.on_pair(name_, value_, false);
    state_ = State::name_len;
  }
}

bool NameValueReader::feed(const char* p, size_t n, Sink& sink) {
  while (n > 0) {
    switch (state_) {
      case State::name_len:
      case State::value_len: {
        lenbuf_[got_++] = uint8_t(*p++);
        --n;
        uint32_t len;
        if (got_ == 1 && !(lenbuf_[0] & 0x80)) {
          len = lenbuf_[0];
        } else if (got_ == 4) {
          len = uint32_t(lenbuf_[0] & 0x7f) << 24 | uint32_t(lenbuf_[1]) << 16 | uint32_t(lenbuf_[2]) << 8 | lenbuf_[3];
        } else {
          break;
        }
        got_ = 0;
        if (state_ == State::name_len) {
          name_len_ = len;
          state_ = State::value_len;
        } else {
          value_len_ = len;
          name_.clear();
          value_.clear();
          truncated_ = false;
          left_ = name_len_;
          state_ = State::name;
          if (left_ == 0) name_done(sink);
        }
        break;
      }
      case State::name: {
        size_t take = left_ < n ? left_ : n;
        if (name_len_ <= kMaxName) name_.append(p, take);
        left_ -= uint32_t(take);
        p += take;
        n -= take;
        if (left_ == 0) name_done(sink);
        break;
      }
      case State::value: {
        size_t take = left_ < n ? left_ : n;
        if (keep_) {
          size_t room = kMaxValue - value_.size();
          value_.append(p, take < room ? take : room);
          if (take > room) truncated_ = true;
        }
        left_ -= uint32_t(take);
        p += take;
        n -= take;
        if (left_ == 0) {
          if (keep_) sink.on_pair(name_, value_, truncated_);
          state_ = State::name_len;
        }
        break;
      }
    }
  }
  return true;
}

void CgiStatus::reset() {
  line_.clear();
  seen_ = 0;
  skip_line_ = false;
  done_ = false;
  status_ = 200;
}

void CgiStatus::on_line() {
  std::string_view l(line_);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (l.empty()) {
    done_ = true;
    return;
  }
  if (l.size() > 7 && strncasecmp(l.data(), "status:", 7) == 0) {
    size_t i = 7;
    while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
    int v = 0, digits = 0;
    while (i < l.size() && digits < 3 && l[i] >= '0' && l[i] <= '9') v = v * 10 + (l[i++] - '0'), ++digits;
    if (digits == 3 && v >= 100) status_ = v;
  }
}

void CgiStatus::feed(const char* p, size_t n) {
  while (n > 0 && !done_) {
    if (seen_ >= kMaxHead) {
      done_ = true;
      return;
    }
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
    size_t take = nl ? size_t(nl - p) : n;
    if (!skip_line_) {
      if (line_.size() + take > kMaxLine) {
        skip_line_ = true;
        line_.clear();
      } else {
        line_.append(p, take);
      }
    }
    seen_ += take + (nl ? 1 : 0);
    p += take;
    n -= take;
    if (!nl) return;
    ++p;
    --n;
    if (!skip_line_) on_line();
    skip_line_ = false;
    line_.clear();
  }
}

size_t pair_len(size_t name_len, size_t value_len) {
  return (name_len < 128 ? 1 : 4) + (value_len < 128 ? 1 : 4) + name_len + value_len;
}

void append_pair(std::string& out, std::string_view name, std::string_view value) {
  auto len = [&](size_t v) {
    if (v < 128) {
      out.push_back(char(v));
    } else {
      out.push_back(char(0x80 | (v >> 24)));
      out.push_back(char(v >> 16));
      out.push_back(char(v >> 8));
      out.push_back(char(v));
    }
  };
  len(name.size());
  len(value.size());
  out.append(name);
  out.append(value);
}

}  // namespace txray::fcgi
