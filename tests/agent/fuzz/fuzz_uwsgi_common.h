// Shared by the uwsgi fuzz targets (fuzz_uwsgi_conn.cpp: the inbound tracker, fuzz_uwsgi_client.cpp: the
// outbound client): the input format, the transactions' descriptions compared between replays, and the
// failure report.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/transaction.h"

namespace txray::uwsgi::fuzz {

struct Record {
  uint8_t kind;  // the input's top two bits: 0 read by the program, 1 written, 2 connection end, 3 opaque
  std::string bytes;
};

[[noreturn]] inline void fail(const char* what, const std::string& a = {}, const std::string& b = {}) {
  fprintf(stderr, "invariant broken: %s\n--- one\n%s\n--- other\n%s\n", what, a.c_str(), b.c_str());
  abort();
}

inline std::vector<std::unique_ptr<Transaction>>& done() {
  static auto* v = new std::vector<std::unique_ptr<Transaction>>();
  return *v;
}
inline void collect(Transaction* t) { done().emplace_back(t); }
inline void install_sink() {
  static bool once = [] {
    tx::set_sink(collect);
    return true;
  }();
  (void)once;
}

// Records from fuzz input: [kind(2 bits) len_hi(6 bits)][len_lo][bytes…] (the length's 14 bits cut at the
// input's end; a record of kind 2 or 3 may be empty).
inline std::vector<Record> records(const uint8_t* data, size_t size) {
  std::vector<Record> out;
  size_t i = 0;
  while (i + 2 <= size) {
    uint8_t kind = data[i] >> 6;
    size_t len = size_t(data[i] & 0x3f) << 8 | data[i + 1];
    i += 2;
    len = std::min(len, size - i);
    out.push_back({kind, std::string(reinterpret_cast<const char*>(data + i), len)});
    i += len;
  }
  return out;
}

// A row or transaction as compared between replays: what does not depend on clocks or random ids.
inline std::string describe_attrs(const std::vector<Attr>& attrs) {
  std::string s;
  for (const Attr& a : attrs)
    if (a.key != "ttfb_us") s += "|" + a.key + "=" + a.value;
  return s;
}

}  // namespace txray::uwsgi::fuzz
