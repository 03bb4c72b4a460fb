// Helpers of the MySQL wire tests: captured connections (captures/*.cap, recorded between real drivers
// and a real MariaDB 10.11 server by a logging TCP proxy: a record per recv() of either side — 'C'
// client to server or 'S' server to client, a 4-byte little-endian length, the bytes), replayed into a
// Conn with the agent's real core, and the rows the transaction got, one line each.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/transaction.h"
#include "protocols/mysql/mysql_conn.h"

namespace txray::mysql::test {

struct Chunk {
  bool client = false;
  std::string bytes;
};

inline std::vector<Chunk> load_capture(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(__FILE__).parent_path() / "captures" / (name + ".cap");
  std::ifstream f(p, std::ios::binary);
  std::string d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<Chunk> out;
  size_t i = 0;
  while (i + 5 <= d.size()) {
    uint32_t n = 0;
    for (int k = 0; k < 4; ++k) n |= uint32_t(static_cast<unsigned char>(d[i + 1 + k])) << (8 * k);
    if (i + 5 + n > d.size()) break;
    out.push_back({d[i] == 'C', d.substr(i + 5, n)});
    i += 5 + n;
  }
  return out;
}

// The transaction rows go to (the tests' wire::statement_tx).
inline Transaction* g_tx = nullptr;
inline int g_tx_calls = 0;
inline Transaction* test_tx(ReqRef&) {
  ++g_tx_calls;
  return g_tx;
}

// The same bytes with one more cut: chunk `at` split after `cut` bytes (0 < cut < its size).
inline std::vector<Chunk> split(const std::vector<Chunk>& in, size_t at, size_t cut) {
  std::vector<Chunk> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == at && cut > 0 && cut < in[i].bytes.size()) {
      out.push_back({in[i].client, in[i].bytes.substr(0, cut)});
      out.push_back({in[i].client, in[i].bytes.substr(cut)});
    } else {
      out.push_back(in[i]);
    }
  }
  return out;
}

// Every chunk cut into pieces of `n` bytes.
inline std::vector<Chunk> pieces(const std::vector<Chunk>& in, size_t n) {
  std::vector<Chunk> out;
  for (const Chunk& c : in)
    for (size_t i = 0; i < c.bytes.size(); i += n) out.push_back({c.client, c.bytes.substr(i, n)});
  return out;
}

inline void feed(Conn& c, const std::vector<Chunk>& chunks, FdSlot* slot = nullptr) {
  for (const Chunk& ch : chunks) {
    if (slot) {
      auto& counter = ch.client ? slot->bytes_written : slot->bytes_read;
      counter.store(counter.load() + ch.bytes.size());
    }
    if (ch.client) {
      c.on_sent(ch.bytes.data(), ch.bytes.size());
    } else {
      c.on_received(ch.bytes.data(), ch.bytes.size());
    }
  }
}

// A row as one line: kind, text, binds, rows, changes, status, error, attributes (bytes apart).
inline std::string line(const Step& s) {
  std::string l = s.kind == StepKind::SQL ? "SQL " : s.kind == StepKind::DB_CONNECT ? "DB_CONNECT " : "OTHER ";
  l += std::string(s.text.view());
  if (!s.binds.empty()) l += " binds=[" + std::string(s.binds.view()) + "]";
  if (s.rows >= 0) l += " rows=" + std::to_string(s.rows);
  if (s.changes >= 0) l += " changes=" + std::to_string(s.changes);
  if (s.status) l += " status=" + std::to_string(s.status);
  if (!s.error.empty()) l += " error=" + s.error;
  for (const Attr& a : s.attrs) l += " " + a.key + "=" + a.value;
  return l;
}

inline std::vector<std::string> lines(const Transaction& t) {
  std::vector<std::string> out;
  for (const Step& s : t.steps)
    if (s.kind == StepKind::SQL || s.kind == StepKind::DB_CONNECT) out.push_back(line(s));
  return out;
}

}  // namespace txray::mysql::test
