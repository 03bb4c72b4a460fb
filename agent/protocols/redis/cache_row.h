// What the Redis and memcached parsers share besides key patterns (cache_key.h): the queue of commands
// written and not yet answered, and how a command's row is opened and closed.
//
// A row opens when the command's first byte is written and closes when the last byte of its reply is
// read — often in another event-loop turn than the request's own, or on another thread, which is why
// nothing touches a step unless rec::usable() says so (a request that ended meanwhile closed its rows
// when it ended). Rows are unnested (rec::open_unnested): a pipeline's commands are all open at once
// and close one by one in order, none the parent of another. A row's elapsed goes into the
// transaction's call totals (CALL TIME in the profile header), as an outbound HTTP call's does.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>

#include "core/recorder.h"

namespace txray::cacherow {

// v in decimal in b: an attribute's value (snprintf was a tenth of a memcached `get`'s cost).
template <typename T>
inline std::string_view decimal(char (&b)[24], T v) {
  return std::string_view(b, size_t(std::to_chars(b, b + sizeof b, v).ptr - b));
}

// Opens a row of `kind` in tx (an empty ref when tx is null).
inline StepRef open(Transaction* tx, StepKind kind) { return tx ? rec::open_unnested(tx, kind) : StepRef{}; }

// Closes s (when usable): the command's and reply's bytes, `error` when not empty, its elapsed into the
// transaction's call totals. s is empty afterwards.
inline void close(StepRef& s, uint64_t read, uint64_t written, std::string_view error) {
  if (s && rec::usable(s)) {
    rec::add_bytes(s, read, written);
    if (!error.empty()) rec::set_error(s, error);
    uint64_t el = rec::close(s);  // what the row or, folded past the step limit, its summary line got
    rec::add_totals(s.tx, {.call_ns = el, .call_count = 1});
  }
  s = StepRef{};
}

// Commands written and not answered yet, oldest first: a ring that grows by doubling up to kMax entries
// (a deeper pipeline makes push() fail: the parser stops following the connection).
template <typename T>
class Fifo {
 public:
  static constexpr size_t kMax = 65536;
  Fifo() = default;
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;
  ~Fifo() { delete[] buf_; }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& front() { return buf_[head_]; }
  T& back() { return buf_[(head_ + n_ - 1) & (cap_ - 1)]; }
  T& at(size_t i) { return buf_[(head_ + i) & (cap_ - 1)]; }
  void pop() {
    buf_[head_] = T{};
    head_ = (head_ + 1) & (cap_ - 1);
    --n_;
  }
  // False when full (kMax) or out of memory.
  bool push(const T& v) {
    if (n_ == cap_ && !grow()) return false;
    buf_[(head_ + n_) & (cap_ - 1)] = v;
    ++n_;
    return true;
  }
  void clear() {
    while (n_) pop();
    head_ = 0;
  }

 private:
  bool grow() {
    size_t cap = cap_ ? cap_ * 2 : 16;
    if (cap > kMax) return false;
    T* b = new (std::nothrow) T[cap];
    if (!b) return false;
    for (size_t i = 0; i < n_; ++i) b[i] = at(i);
    delete[] buf_;
    buf_ = b;
    cap_ = cap;
    head_ = 0;
    return true;
  }
  T* buf_ = nullptr;
  size_t cap_ = 0, head_ = 0, n_ = 0;
};

}  // namespace txray::cacherow
