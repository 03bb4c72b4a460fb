// Shared by the MySQL/MariaDB wire client's fuzz targets (fuzz_mysql_conn.cpp, fuzz_mysql_client.cpp,
// fuzz_mysql_server.cpp): a mysql::Conn (agent/protocols/mysql/mysql_conn.h) with the agent's real
// transaction core, fed (direction, bytes) records twice — each record whole, then in pieces — and the
// promises every target checks:
//  - the rows (kind, text, binds, rows, changes, bytes, error, attributes) are the same however the
//    records are cut: the parser's state does not depend on where the program's calls split the bytes;
//  - once stopped, it stays stopped;
//  - what it keeps stays bounded: at most kMaxPipelined commands owed, kMaxStatements statements, and
//    the framers' buffers no bigger than the largest head they keep.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/recorder.h"
#include "core/transaction.h"
#include "protocols/mysql/mysql_conn.h"

namespace txray::mysql::fuzz {

struct Record {
  bool sent;
  std::string bytes;
};

[[noreturn]] inline void fail(const char* what, const std::string& a = {}, const std::string& b = {}) {
  fprintf(stderr, "invariant broken: %s\n--- whole\n%s\n--- pieces\n%s\n", what, a.c_str(), b.c_str());
  abort();
}

inline std::vector<std::unique_ptr<Transaction>>& done() {
  static auto* v = new std::vector<std::unique_ptr<Transaction>>();
  return *v;
}
inline void collect(Transaction* t) { done().emplace_back(t); }
inline Transaction* current_tx(ReqRef&) { return rec::current(); }

inline std::string describe(const Transaction& t) {
  std::string s;
  for (const Step& st : t.steps) {
    if (st.kind != StepKind::SQL && st.kind != StepKind::DB_CONNECT) continue;
    s += std::to_string(int(st.kind)) + "|" + std::string(st.text.view()) + "|" + std::string(st.binds.view()) + "|" +
         std::to_string(st.rows) + "|" + std::to_string(st.changes) + "|" + std::to_string(st.bytes_read) + "|" +
         std::to_string(st.bytes_written) + "|" + st.error;
    for (const Attr& a : st.attrs) s += "|" + a.key + "=" + a.value;
    s += "\n";
  }
  return s;
}

// Replays the records into one transaction; piece > 0 cuts every record into parts of 1..piece bytes
// (the sizes taken in turn from the record's own bytes, so that they vary).
inline std::string replay(const std::vector<Record>& recs, size_t piece) {
  static bool init = [] {
    tx::set_sink(collect);
    return true;
  }();
  (void)init;
  done().clear();
  FdSlot slot;
  slot.kind.store(FdKind::outbound);
  WireEnv env;
  env.slot = &slot;
  env.peer = "127.0.0.1:3306";
  Transaction* t = tx::begin("fuzz", "test");
  tx::make_current(t);
  std::string result;
  {
    Conn c(env, current_tx);
    bool was_stopped = false;
    for (const Record& r : recs) {
      size_t at = 0, k = 0;
      while (at < r.bytes.size()) {
        size_t n = r.bytes.size() - at;
        if (piece) n = std::min(n, 1 + size_t(uint8_t(r.bytes[k++ % r.bytes.size()])) % piece);
        const char* p = r.bytes.data() + at;
        if (r.sent) {
          slot.add_written(n);
          c.on_sent(p, n);
        } else {
          slot.add_read(n);
          c.on_received(p, n);
        }
        at += n;
        if (was_stopped && !c.stopped()) fail("stopped, then not");
        was_stopped = c.stopped();
        if (c.pipelined() > Conn::kMaxPipelined) fail("more commands owed than the bound");
        if (c.statements() > Conn::kMaxStatements) fail("more statements than the bound");
      }
    }
    c.on_end("end");
  }
  tx::end(t, 200, "");
  tx::make_current(nullptr);
  if (!done().empty()) result = describe(*done().back());
  done().clear();
  return result;
}

inline void check(const std::vector<Record>& recs) {
  std::string whole = replay(recs, 0);
  for (size_t piece : {1, 7}) {
    std::string cut = replay(recs, piece);
    if (cut != whole) fail("rows differ with the records cut in pieces", whole, cut);
  }
}

// Records from fuzz input: [d|len_hi][len_lo][bytes…] (bit 7 of the first byte: 1 = the program wrote
// them, 0 = it read them; the length's 15 bits cut at the input's end).
inline std::vector<Record> records(const uint8_t* data, size_t size) {
  std::vector<Record> out;
  size_t i = 0;
  while (i + 2 <= size) {
    bool sent = data[i] & 0x80;
    size_t len = size_t(data[i] & 0x7f) << 8 | data[i + 1];
    i += 2;
    len = std::min(len, size - i);
    if (len) out.push_back({sent, std::string(reinterpret_cast<const char*>(data + i), len)});
    i += len;
  }
  return out;
}

// A real MariaDB 10.11 greeting, a PyMySQL HandshakeResponse41 (root, database txray, no CLIENT_DEPRECATE_EOF)
// and the server's OK: the conversation the one-direction targets start from.
inline std::vector<Record> handshake() {
  static const unsigned char g[] = {
      0x64, 0x00, 0x00, 0x00, 0x0a, '5', '.', '5', '.', '5', '-', '1', '0', '.', '1', '1', '.', '1', '9', '-', 'M', 'a',
      'r', 'i', 'a', 'D', 'B', 0x00, 0x06, 0x00, 0x00, 0x00, '4', '7', 'V', '-', '{', 'G', '/', 'R', 0x00, 0xfe, 0xf7,
      0x08, 0x02, 0x00, 0xff, 0x81, 0x15, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 'a', 'b', 'c',
      'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 0x00, 'm', 'y', 's', 'q', 'l', '_', 'n', 'a', 't', 'i', 'v', 'e',
      '_', 'p', 'a', 's', 's', 'w', 'o', 'r', 'd', 0x00};
  std::string greeting(reinterpret_cast<const char*>(g), sizeof g);
  greeting[0] = char(greeting.size() - 4);
  std::string resp("\x0d\xa2\x3b\x00\xff\xff\xff\x00\x2d", 9);
  resp += std::string(23, '\0') + std::string("root\0\0txray\0mysql_native_password\0", 34);
  std::string r(4, '\0');
  r[0] = char(resp.size());
  r[3] = 1;
  return {{false, greeting}, {true, r + resp}, {false, std::string("\x07\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00", 11)}};
}

}  // namespace txray::mysql::fuzz
