// A minimal protobuf wire-format writer, so that the agent encodes its batches straight from its own
// structs: no message objects to build and free per transaction, and no libprotobuf (and no descriptor
// registration) inside the host process. Proto3 rules: fields at their default value are not written.
// Field numbers live in encode.cpp next to proto/txray/v1/txray.proto, which stays the contract (the
// transport test decodes what this writes with the generated code).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace txray::pb {

// Writes into `out` through a raw cursor: `out` is grown ahead (doubling) and cut to what was written
// when the Writer is destroyed, so a field costs a few stores instead of a std::string append per tag,
// varint and value (the agent thread's encoding was ~1,500 instructions per transaction before).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out), pos_(out.size()) {}
  ~Writer() { out_.resize(pos_); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Inlined (issue 14): the tag is a constant where the field number is, and most values take one or
  // two bytes, so a field is a few stores; the out-of-line version was ~30-125 instructions a field.
  __attribute__((always_inline)) void u64(int field, uint64_t v) {
    if (!v) return;
    room(kMaxVarint * 2);
    char* p = cur();
    p += encode_varint(uint64_t(field) << 3, p);
    p += encode_varint(v, p);
    pos_ = size_t(p - out_.data());
  }
  // Negative: 10 bytes, as protobuf; -1 (the "unknown" of rows, changes and parent) is copied whole.
  __attribute__((always_inline)) void i64(int field, int64_t v) {
    if (v != -1) return u64(field, uint64_t(v));
    room(kMaxVarint * 2);
    char* p = cur();
    p += encode_varint(uint64_t(field) << 3, p);
    std::memcpy(p, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
    pos_ = size_t(p + 10 - out_.data());
  }
  __attribute__((always_inline)) void i32(int field, int32_t v) { i64(field, int64_t(v)); }  // sign-extended
  void fixed64(int field, uint64_t v) {
    if (!v) return;
    room(kMaxVarint + 8);
    char* p = cur();
    p += encode_varint(uint64_t(field) << 3 | 1, p);
    for (int i = 0; i < 8; ++i) p[i] = char(v >> (8 * i));
    pos_ = size_t(p + 8 - out_.data());
  }
  void bytes(int field, std::string_view s) {
    if (s.empty()) return;
    room(kMaxVarint * 2 + s.size());
    char* p = cur();
    p += encode_varint(uint64_t(field) << 3 | 2, p);
    p += encode_varint(s.size(), p);
    std::memcpy(p, s.data(), s.size());
    pos_ = size_t(p + s.size() - out_.data());
  }
  // A proto3 `string`: must be UTF-8 or the receiver rejects the whole message; invalid bytes become '?'.
  void str(int field, std::string_view s) {
    if (valid_utf8(s)) return bytes(field, s);
    std::string fixed = sanitize_utf8(s);
    bytes(field, fixed);
  }

  // Bytes already in wire format (a field encoded before), appended as they are.
  void raw(std::string_view s) {
    room(s.size());
    std::memcpy(cur(), s.data(), s.size());
    pos_ += s.size();
  }

  // Nested message: begin() returns a mark, end() writes the length in front of what was written since.
  size_t begin(int field) {
    room(kMaxVarint + kLenReserve);
    pos_ += encode_varint(uint64_t(field) << 3 | 2, cur());
    size_t mark = pos_;
    pos_ += kLenReserve;
    return mark;
  }
  void end(size_t mark) {
    size_t body = mark + kLenReserve;
    uint64_t len = pos_ - body;
    char* base = out_.data();
    size_t n = encode_varint(len, base + mark);
    if (n < kLenReserve) {
      std::memmove(base + mark + n, base + body, len);
      pos_ -= kLenReserve - n;
    }
  }

  static bool valid_utf8(std::string_view s);
  static std::string sanitize_utf8(std::string_view s);

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
  char* cur() { return out_.data() + pos_; }
  void room(size_t n) {
    if (__builtin_expect(out_.size() - pos_ < n, 0)) grow(n);
  }
  void grow(size_t n) {
    size_t want = out_.size() + out_.size() / 2;  // what resize() clears is written over right after
    if (want < pos_ + n + 512) want = pos_ + n + 512;
    out_.resize(want);
  }

  std::string& out_;
  size_t pos_;  // bytes written; out_ beyond it is room
};

}  // namespace txray::pb
