#include "protocols/uwsgi/uwsgi_packet.h"

#include <cstring>

namespace txray::uwsgi {

int looks_like_packet(const char* p, size_t n) {
  auto u = [&](size_t i) { return uint8_t(p[i]); };
  if (n >= 1 && u(0) != 0) return -1;
  if (n < kHeaderLen) return 0;
  uint16_t size = uint16_t(u(1) | u(2) << 8);
  if (u(3) != 0 || size < 5) return -1;  // a var is at least 2 + 1 + 2 bytes
  if (n < 6) return 0;
  uint16_t key = uint16_t(u(4) | u(5) << 8);
  if (key == 0 || key > 64 || size_t(key) + 4 > size) return -1;
  if (n < 7) return 0;
  char c = p[6];
  return ((c >= 'A' && c <= 'Z') || c == '_') ? 1 : -1;
}

void VarsReader::reset() {
  state_ = State::header;
  got_ = 0;
  left_data_ = left_ = 0;
  datasize_ = key_len_ = 0;
  keep_ = truncated_ = false;
  key_.clear();
  value_.clear();
}

size_t VarsReader::feed(const char* p, size_t n, Sink& sink) {
  size_t used = 0;
  auto take_len = [&](State next) {
    while (used < n && got_ < 2) {
      lenbuf_[got_++] = uint8_t(p[used++]);
      --left_data_;
    }
    if (got_ < 2) return false;
    got_ = 0;
    left_ = uint32_t(lenbuf_[0] | lenbuf_[1] << 8);
    if (left_ > left_data_) {
      state_ = State::dead;
      return false;
    }
    state_ = next;
    return true;
  };
  while (used < n || state_ == State::key || state_ == State::value) {
    switch (state_) {
      case State::header: {
        while (used < n && got_ < kHeaderLen) hdr_[got_++] = p[used++];
        if (got_ < kHeaderLen) return used;
        got_ = 0;
        datasize_ = uint16_t(uint8_t(hdr_[1]) | uint8_t(hdr_[2]) << 8);
        left_data_ = datasize_;
        if (hdr_[0] != 0) {
          state_ = State::dead;
          return used;
        }
        state_ = left_data_ ? State::key_len : State::done;
        break;
      }
      case State::key_len:
        if (left_data_ < 2) {
          state_ = State::dead;
          return used;
        }
        if (!take_len(State::key)) return used;
        key_len_ = uint16_t(left_);
        key_.clear();
        break;
      case State::key: {
        size_t take = left_ < n - used ? left_ : n - used;
        if (key_len_ <= kMaxKey) key_.append(p + used, take);
        used += take;
        left_ -= uint32_t(take);
        left_data_ -= uint32_t(take);
        if (left_) return used;
        if (left_data_ < 2) {
          state_ = State::dead;
          return used;
        }
        keep_ = key_len_ <= kMaxKey && sink.wanted(key_);
        value_.clear();
        truncated_ = false;
        state_ = State::value_len;
        break;
      }
      case State::value_len:
        if (!take_len(State::value)) return used;
        break;
      case State::value: {
        size_t take = left_ < n - used ? left_ : n - used;
        if (keep_) {
          size_t room = kMaxValue - value_.size();
          value_.append(p + used, take < room ? take : room);
          if (take > room) truncated_ = true;
        }
        used += take;
        left_ -= uint32_t(take);
        left_data_ -= uint32_t(take);
        if (left_) return used;
        if (keep_) sink.on_var(key_, value_, truncated_);
        state_ = left_data_ ? State::key_len : State::done;
        break;
      }
      case State::done:
      case State::dead:
        return used;
    }
  }
  return used;
}

void append_var(std::string& out, std::string_view key, std::string_view value) {
  out.push_back(char(key.size()));
  out.push_back(char(key.size() >> 8));
  out.append(key);
  out.push_back(char(value.size()));
  out.push_back(char(value.size() >> 8));
  out.append(value);
}

}  // namespace txray::uwsgi
