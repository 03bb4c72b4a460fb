// A minimal protobuf wire-format writer, so that the agent encodes its batches straight from its own
// structs: no message objects to build and free per transaction, and no libprotobuf (and no descriptor
// registration) inside the host process. Proto3 rules: fields at their default value are not written.
// Field numbers live in encode.cpp next to proto/txray/v1/txray.proto, which stays the contract (the
// transport test decodes what this writes with the generated code).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace txray::pb {

static_assert(std::endian::native == std::endian::little, "fixed64 fields are copied as they are in memory");

// Writes into `out` through a raw cursor: `out` is grown ahead (by half) and cut to what was written
// when the Writer is destroyed, so a field costs a few stores instead of a std::string append per tag,
// varint and value (the agent thread's encoding was ~1,500 instructions per transaction before).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) { attach(out.size()); }
  // Writes from the start of `out`, over what it holds: its size is room that needs no growing, and it
  // keeps its size (at least what was written: size() says how much) when the Writer is done (the
  // batch buffer kept at its size between batches instead of grown again from empty).
  struct KeepSize {};
  Writer(std::string& out, KeepSize) : out_(out), keep_size_(true) { attach(0); }
  ~Writer() {
    if (!keep_size_) out_.resize(size());
  }
  size_t size() const { return size_t(p_ - base_); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  static constexpr size_t kLenReserve = 5;  // a 32-bit length fits in 5 varint bytes
  static constexpr size_t kMaxVarint = 10;
  static constexpr size_t kField = 2 * kMaxVarint;            // the most bytes a scalar field takes
  static constexpr size_t kBegin = kMaxVarint + kLenReserve;  // … and begin()
  static constexpr size_t room_for(std::string_view s) { return 2 * kMaxVarint + s.size(); }  // str(), bytes()

  // A run of fields whose most bytes are known beforehand (kField per scalar, room_for() per string):
  // one room check for the whole run, and the cursor kept in a register from field to field (the
  // check and a load and store of the cursor per field were ~a third of a transaction's encoding).
  // No method of the Writer may be called while a Run of it is open.
  class Run {
   public:
    __attribute__((always_inline)) Run(Writer& w, size_t max_bytes) : w_(w), p_(w.room(max_bytes)) {}
    __attribute__((always_inline)) ~Run() { w_.p_ = p_; }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    // Inlined: the tag is a constant where the field number is, and most values take one or
    // two bytes, so a field is a few stores.
    __attribute__((always_inline)) void u64(int field, uint64_t v) {
      if (!v) return;
      p_ += encode_varint(uint64_t(field) << 3, p_);
      p_ += encode_varint(v, p_);
    }
    // Negative: 10 bytes, as protobuf; -1 (the "unknown" of rows, changes and parent) is copied whole.
    __attribute__((always_inline)) void i64(int field, int64_t v) {
      if (v != -1) return u64(field, uint64_t(v));
      p_ += encode_varint(uint64_t(field) << 3, p_);
      std::memcpy(p_, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
      p_ += 10;
    }
    __attribute__((always_inline)) void i32(int field, int32_t v) { i64(field, int64_t(v)); }  // sign-extended
    __attribute__((always_inline)) void fixed64(int field, uint64_t v) {
      if (!v) return;
      p_ += encode_varint(uint64_t(field) << 3 | 1, p_);
      std::memcpy(p_, &v, 8);  // little-endian, as the wire wants it (x86-64, aarch64)
      p_ += 8;
    }
    __attribute__((always_inline)) void bytes(int field, std::string_view s) {
      if (s.empty()) return;
      p_ += encode_varint(uint64_t(field) << 3 | 2, p_);
      p_ += encode_varint(s.size(), p_);
      copy(p_, s.data(), s.size());
      p_ += s.size();
    }
    // A proto3 `string`: must be UTF-8 or the receiver rejects the whole message; invalid bytes become
    // '?' (one per byte: the same length, so the room counted for s holds it).
    __attribute__((always_inline)) void str(int field, std::string_view s) {
      if (__builtin_expect(ascii(s), 1)) return bytes(field, s);
      str_slow(field, s);
    }
    // Nested message: begin() returns a mark for the Writer's end(), called after the Run.
    __attribute__((always_inline)) size_t begin(int field, size_t reserve = kLenReserve) {
      p_ += encode_varint(uint64_t(field) << 3 | 2, p_);
      p_ += reserve;
      return size_t(p_ - w_.base_) - reserve;
    }

   private:
    __attribute__((noinline)) void str_slow(int field, std::string_view s) {
      if (valid_utf8(s)) return bytes(field, s);
      std::string fixed = sanitize_utf8(s);
      bytes(field, fixed);
    }
    Writer& w_;
    char* p_;
  };

  __attribute__((always_inline)) void u64(int field, uint64_t v) {
    if (!v) return;
    Run(*this, kField).u64(field, v);
  }
  __attribute__((always_inline)) void i64(int field, int64_t v) { Run(*this, kField).i64(field, v); }
  __attribute__((always_inline)) void i32(int field, int32_t v) { i64(field, int64_t(v)); }  // sign-extended
  __attribute__((always_inline)) void fixed64(int field, uint64_t v) {
    if (!v) return;
    Run(*this, kField).fixed64(field, v);
  }
  void bytes(int field, std::string_view s) {
    if (s.empty()) return;
    Run(*this, room_for(s)).bytes(field, s);
  }
  void str(int field, std::string_view s) {
    if (s.empty()) return;
    Run(*this, room_for(s)).str(field, s);
  }
  // Bytes already in wire format (a field encoded before), appended as they are.
  void raw(std::string_view s) {
    char* p = room(s.size());
    std::memcpy(p, s.data(), s.size());
    p_ = p + s.size();
  }

  // Nested message: begin() returns a mark, end() writes the length in front of what was written since.
  // `reserve`: the bytes kept for the length (the same at both), the length's likely size — a row's body
  // is most often under 128 bytes (1), a transaction's under 16 KiB (2) — so that its bytes need no move
  // (a memmove of every nested message's body, ~25 instructions each); a length of another
  // size moves the body (the bytes on the wire are the same: the length always in its fewest bytes).
  size_t begin(int field, size_t reserve = kLenReserve) { return Run(*this, kBegin).begin(field, reserve); }
  void end(size_t mark, size_t reserve = kLenReserve) {
    size_t body = mark + reserve;
    uint64_t len = uint64_t(p_ - base_) - body;
    size_t n = varint_size(len);
    if (__builtin_expect(n != reserve, 0)) {
      if (n > reserve) room(n - reserve);  // may move the buffer: base_ is read after
      std::memmove(base_ + mark + n, base_ + body, len);
      p_ = p_ + n - reserve;
    }
    encode_varint(len, base_ + mark);
  }

  static bool valid_utf8(std::string_view s);
  static std::string sanitize_utf8(std::string_view s);
  // True when every byte is below 0x80 (nearly every text the agent sends): whole words, the last one
  // overlapping, so a short name costs a few instructions and no call.
  __attribute__((always_inline)) static bool ascii(std::string_view s) {
    const char* p = s.data();
    size_t n = s.size();
    uint64_t acc = 0, w;
    if (n >= 8) {
      size_t i = 0;
      for (; i + 8 <= n; i += 8) {
        std::memcpy(&w, p + i, 8);
        acc |= w;
      }
      std::memcpy(&w, p + n - 8, 8);
      acc |= w;
    } else if (n >= 4) {
      uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      acc = a | b;
    } else {
      for (size_t i = 0; i < n; ++i) acc |= uint64_t(static_cast<unsigned char>(p[i]));
    }
    return !(acc & 0x8080808080808080ull);
  }

 private:
  // n bytes from s to d: up to 32 with overlapping word moves (most of the agent's strings: a name, an
  // address, a trace id), no call.
  __attribute__((always_inline)) static void copy(char* d, const char* s, size_t n) {
    if (n > 32) {
      std::memcpy(d, s, n);
    } else if (n >= 8) {
      uint64_t a, b;
      if (n > 16) {
        uint64_t c, e;
        std::memcpy(&a, s, 8);
        std::memcpy(&b, s + 8, 8);
        std::memcpy(&c, s + n - 16, 8);
        std::memcpy(&e, s + n - 8, 8);
        std::memcpy(d, &a, 8);
        std::memcpy(d + 8, &b, 8);
        std::memcpy(d + n - 16, &c, 8);
        std::memcpy(d + n - 8, &e, 8);
      } else {
        std::memcpy(&a, s, 8);
        std::memcpy(&b, s + n - 8, 8);
        std::memcpy(d, &a, 8);
        std::memcpy(d + n - 8, &b, 8);
      }
    } else if (n >= 4) {
      uint32_t a, b;
      std::memcpy(&a, s, 4);
      std::memcpy(&b, s + n - 4, 4);
      std::memcpy(d, &a, 4);
      std::memcpy(d + n - 4, &b, 4);
    } else if (n) {
      d[0] = s[0];
      d[n / 2] = s[n / 2];
      d[n - 1] = s[n - 1];
    }
  }

  __attribute__((always_inline)) static size_t encode_varint(uint64_t v, char* p) {
    if (__builtin_expect(v < 0x80, 1)) {
      p[0] = char(v);
      return 1;
    }
    if (v < 0x4000) {
      p[0] = char(v | 0x80);
      p[1] = char(v >> 7);
      return 2;
    }
    return encode_long_varint(v, p);
  }
  static size_t varint_size(uint64_t v) { return v < 0x80 ? 1 : v < 0x4000 ? 2 : size_t(64 - __builtin_clzll(v) + 6) / 7; }
  static size_t encode_long_varint(uint64_t v, char* p) {
    if (v < (1ull << 21)) {  // three bytes: nanoseconds of a few µs to 2 ms, the commonest
      p[0] = char(v | 0x80);
      p[1] = char(v >> 7 | 0x80);
      p[2] = char(v >> 14);
      return 3;
    }
    size_t n = 0;
    while (v >= 0x80) {
      p[n++] = char(v | 0x80);
      v >>= 7;
    }
    p[n++] = char(v);
    return n;
  }
  // The cursor with at least n bytes of room after it.
  __attribute__((always_inline)) char* room(size_t n) {
    char* p = p_;
    if (__builtin_expect(size_t(end_ - p) < n, 0)) p = grow(n);
    return p;
  }
  __attribute__((noinline)) char* grow(size_t n) {
    size_t pos = size_t(p_ - base_);
    size_t want = out_.size() + out_.size() / 2;  // what resize() clears is written over right after
    if (want < pos + n + 512) want = pos + n + 512;
    out_.resize(want);
    attach(pos);
    return p_;
  }
  void attach(size_t pos) {
    base_ = out_.data();
    p_ = base_ + pos;
    end_ = base_ + out_.size();
  }

  std::string& out_;
  bool keep_size_ = false;
  char* base_ = nullptr;
  char* p_ = nullptr;    // next byte to write; out_ beyond it is room
  char* end_ = nullptr;
};

}  // namespace txray::pb
