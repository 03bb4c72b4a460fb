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
  ~Writer() { out_.resize(size_t(p_ - base_)); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Inlined (issue 14): the tag is a constant where the field number is, and most values take one or
  // two bytes, so a field is a few stores. Each field loads the cursor once into a local and stores it
  // back once: the char stores may alias anything, so a cursor read through `out_` (the first version)
  // was reloaded after every byte.
  __attribute__((always_inline)) void u64(int field, uint64_t v) {
    if (!v) return;
    char* p = room(kMaxVarint * 2);
    p += encode_varint(uint64_t(field) << 3, p);
    p += encode_varint(v, p);
    p_ = p;
  }
  // Negative: 10 bytes, as protobuf; -1 (the "unknown" of rows, changes and parent) is copied whole.
  __attribute__((always_inline)) void i64(int field, int64_t v) {
    if (v != -1) return u64(field, uint64_t(v));
    char* p = room(kMaxVarint * 2);
    p += encode_varint(uint64_t(field) << 3, p);
    std::memcpy(p, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
    p_ = p + 10;
  }
  __attribute__((always_inline)) void i32(int field, int32_t v) { i64(field, int64_t(v)); }  // sign-extended
  __attribute__((always_inline)) void fixed64(int field, uint64_t v) {
    if (!v) return;
    char* p = room(kMaxVarint + 8);
    p += encode_varint(uint64_t(field) << 3 | 1, p);
    std::memcpy(p, &v, 8);  // little-endian, as the wire wants it (x86-64, aarch64)
    p_ = p + 8;
  }
  void bytes(int field, std::string_view s) {
    if (s.empty()) return;
    char* p = room(kMaxVarint * 2 + s.size());
    p += encode_varint(uint64_t(field) << 3 | 2, p);
    p += encode_varint(s.size(), p);
    std::memcpy(p, s.data(), s.size());
    p_ = p + s.size();
  }
  // A proto3 `string`: must be UTF-8 or the receiver rejects the whole message; invalid bytes become '?'.
  void str(int field, std::string_view s) {
    if (ascii(s) || valid_utf8(s)) return bytes(field, s);
    std::string fixed = sanitize_utf8(s);
    bytes(field, fixed);
  }
  // Bytes already in wire format (a field encoded before), appended as they are.
  void raw(std::string_view s) {
    char* p = room(s.size());
    std::memcpy(p, s.data(), s.size());
    p_ = p + s.size();
  }

  // Nested message: begin() returns a mark, end() writes the length in front of what was written since.
  size_t begin(int field) {
    char* p = room(kMaxVarint + kLenReserve);
    p += encode_varint(uint64_t(field) << 3 | 2, p);
    p_ = p + kLenReserve;
    return size_t(p - base_);
  }
  void end(size_t mark) {
    char* base = base_;
    size_t body = mark + kLenReserve;
    uint64_t len = uint64_t(p_ - base) - body;
    size_t n = encode_varint(len, base + mark);
    if (n < kLenReserve) {
      std::memmove(base + mark + n, base + body, len);
      p_ -= kLenReserve - n;
    }
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
    } else {
      for (size_t i = 0; i < n; ++i) acc |= uint64_t(static_cast<unsigned char>(p[i]));
    }
    return !(acc & 0x8080808080808080ull);
  }

 private:
  static constexpr size_t kLenReserve = 5;  // a 32-bit length fits in 5 varint bytes
  static constexpr size_t kMaxVarint = 10;

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
  static size_t encode_long_varint(uint64_t v, char* p) {
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
  char* base_ = nullptr;
  char* p_ = nullptr;    // next byte to write; out_ beyond it is room
  char* end_ = nullptr;
};

}  // namespace txray::pb
