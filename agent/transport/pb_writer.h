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

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void u64(int field, uint64_t v) {
    if (!v) return;
    tag(field, 0);
    varint(v);
  }
  void i64(int field, int64_t v) { u64(field, uint64_t(v)); }            // negative: 10 bytes, as protobuf
  void i32(int field, int32_t v) { u64(field, uint64_t(int64_t(v))); }   // sign-extended, as protobuf
  void fixed64(int field, uint64_t v) {
    if (!v) return;
    tag(field, 1);
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = char(v >> (8 * i));
    out_.append(b, 8);
  }
  void bytes(int field, std::string_view s) {
    if (s.empty()) return;
    tag(field, 2);
    varint(s.size());
    out_.append(s.data(), s.size());
  }
  // A proto3 `string`: must be UTF-8 or the receiver rejects the whole message; invalid bytes become '?'.
  void str(int field, std::string_view s) {
    if (valid_utf8(s)) return bytes(field, s);
    std::string fixed = sanitize_utf8(s);
    bytes(field, fixed);
  }

  // Nested message: begin() returns a mark, end() writes the length in front of what was written since.
  size_t begin(int field) {
    tag(field, 2);
    size_t mark = out_.size();
    out_.append(kLenReserve, '\0');
    return mark;
  }
  void end(size_t mark) {
    size_t body = mark + kLenReserve;
    uint64_t len = out_.size() - body;
    char tmp[10];
    size_t n = encode_varint(len, tmp);
    std::memcpy(&out_[mark], tmp, n);
    if (n < kLenReserve) out_.erase(mark + n, kLenReserve - n);
  }

  static bool valid_utf8(std::string_view s);
  static std::string sanitize_utf8(std::string_view s);

 private:
  static constexpr size_t kLenReserve = 5;  // a 32-bit length fits in 5 varint bytes

  static size_t encode_varint(uint64_t v, char* p) {
    size_t n = 0;
    while (v >= 0x80) {
      p[n++] = char(v | 0x80);
      v >>= 7;
    }
    p[n++] = char(v);
    return n;
  }
  void varint(uint64_t v) {
    char tmp[10];
    out_.append(tmp, encode_varint(v, tmp));
  }
  void tag(int field, int wire_type) { varint(uint64_t(field) << 3 | uint64_t(wire_type)); }

  std::string& out_;
};

}  // namespace txray::pb
