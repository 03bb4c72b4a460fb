// An immutable, reference-counted string: what a profile row's text is.
//
// A prepared statement's masked text is built once and then recorded by every execution of the
// statement; copying a SharedText only bumps a counter (no allocation, no byte copy), so a SQL row costs
// no text work at all. Built from a string_view it allocates once, like a std::string would.
// The count is atomic: the statement state (hook thread) and the transaction (handed to the transport
// thread) may drop their copies on different threads. The bytes never change after construction.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>
#include <ostream>
#include <string>
#include <string_view>

namespace txray {

class SharedText {
 public:
  SharedText() = default;
  explicit SharedText(std::string_view s) : rep_(make(s)) {}
  SharedText(const SharedText& o) : rep_(o.rep_) {
    if (rep_) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedText(SharedText&& o) noexcept : rep_(o.rep_) { o.rep_ = nullptr; }
  SharedText& operator=(const SharedText& o) {
    SharedText tmp(o);
    swap(tmp);
    return *this;
  }
  SharedText& operator=(SharedText&& o) noexcept {
    SharedText tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  // Replaces the text with a fresh copy of `s` (the old bytes stay valid for other holders).
  SharedText& operator=(std::string_view s) {
    SharedText tmp(s);
    swap(tmp);
    return *this;
  }
  void assign(std::string_view s) { *this = s; }
  ~SharedText() { release(); }

  std::string_view view() const { return rep_ ? std::string_view(rep_->data(), rep_->size) : std::string_view(); }
  operator std::string_view() const { return view(); }  // NOLINT: reads like a string wherever one is read
  bool empty() const { return !rep_ || rep_->size == 0; }
  size_t size() const { return rep_ ? rep_->size : 0; }
  void swap(SharedText& o) noexcept { std::swap(rep_, o.rep_); }

  friend bool operator==(const SharedText& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const SharedText& a, const SharedText& b) { return a.view() == b.view(); }
  friend std::ostream& operator<<(std::ostream& os, const SharedText& t) { return os << t.view(); }

 private:
  // Header and bytes in one allocation.
  struct Rep {
    std::atomic<uint32_t> refs;
    uint32_t size;
    char* data() { return reinterpret_cast<char*>(this + 1); }
  };
  static Rep* make(std::string_view s) {
    if (s.empty()) return nullptr;
    void* p = ::operator new(sizeof(Rep) + s.size());
    Rep* r = new (p) Rep{{1}, uint32_t(s.size())};
    std::memcpy(r->data(), s.data(), s.size());
    return r;
  }
  void release() {
    if (rep_ && rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      rep_->~Rep();
      ::operator delete(rep_);
    }
    rep_ = nullptr;
  }
  Rep* rep_ = nullptr;
};

}  // namespace txray
