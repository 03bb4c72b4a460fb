// pb::Writer against a plain reference encoder (issue 14: runs of fields under one room check, inline
// copies of short strings, nested lengths in a reserved number of bytes, a buffer written over from its
// start): the bytes must be exactly protobuf's, whatever the sizes.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>

#include "transport/pb_writer.h"

namespace {

using txray::pb::Writer;

void ref_varint(std::string& o, uint64_t v) {
  while (v >= 0x80) {
    o += char(v | 0x80);
    v >>= 7;
  }
  o += char(v);
}

std::string random_text(std::mt19937_64& rng) {
  size_t n = rng() % 50 == 0 ? rng() % 20000 : rng() % 200;
  std::string s(n, 'x');
  bool plain = rng() % 3 == 0;
  for (auto& c : s) c = char(!plain && rng() % 8 == 0 ? rng() % 256 : 'a' + rng() % 26);
  return s;
}

TEST(PbWriter, SameBytesAsAReferenceEncoder) {
  std::mt19937_64 rng(14);
  for (int it = 0; it < 20000; ++it) {
    std::string out(rng() % 3 ? 0 : rng() % 300, 'q');
    // Appended to what out holds, or written over it from its start (KeepSize: the batch buffer).
    bool keep = rng() % 2;
    std::string ref = keep ? std::string() : out;
    size_t written;
    {
      std::optional<Writer> wo;
      if (keep) wo.emplace(out, Writer::KeepSize{});
      else wo.emplace(out);
      Writer& w = *wo;
      int fields = int(rng() % 12);
      for (int f = 0; f < fields; ++f) {
        int field = 1 + int(rng() % 30);
        uint64_t v = rng() >> (rng() % 64);
        if (rng() % 4 == 0) v = 0;
        std::string s = random_text(rng);
        switch (rng() % 5) {
          case 0:
            w.u64(field, v);
            if (v) ref_varint(ref, uint64_t(field) << 3), ref_varint(ref, v);
            break;
          case 1: {
            int64_t x = rng() % 3 == 0 ? -1 : int64_t(v);
            w.i64(field, x);
            if (x) ref_varint(ref, uint64_t(field) << 3), ref_varint(ref, uint64_t(x));
            break;
          }
          case 2:
            w.fixed64(field, v);
            if (v) ref_varint(ref, uint64_t(field) << 3 | 1), ref.append(reinterpret_cast<const char*>(&v), 8);
            break;
          case 3:
            w.bytes(field, s);
            if (!s.empty()) ref_varint(ref, uint64_t(field) << 3 | 2), ref_varint(ref, s.size()), ref += s;
            break;
          default: {  // a nested message written by a Run, its length in 1 to 5 reserved bytes
            size_t reserve = 1 + rng() % 5, m;
            {
              Writer::Run r(w, Writer::kBegin + Writer::room_for(s) + Writer::kField);
              m = r.begin(field, reserve);
              r.str(1, s);
              r.u64(2, v);
            }
            w.end(m, reserve);
            std::string body;
            if (!s.empty()) {
              std::string t = Writer::valid_utf8(s) ? s : Writer::sanitize_utf8(s);
              ref_varint(body, 1 << 3 | 2), ref_varint(body, t.size()), body += t;
            }
            if (v) ref_varint(body, 2 << 3), ref_varint(body, v);
            ref_varint(ref, uint64_t(field) << 3 | 2), ref_varint(ref, body.size()), ref += body;
          }
        }
      }
      written = w.size();
    }
    if (keep) {
      ASSERT_GE(out.size(), written);
      out.resize(written);
    }
    ASSERT_EQ(out, ref) << "case " << it;
  }
}

}  // namespace
