// Shared by the PostgreSQL wire client's fuzz targets (fuzz_pg_frontend.cpp, fuzz_pg_backend.cpp,
// fuzz_pg_conn.cpp): a PgConn (agent/protocols/pg/pg_conn.h) with the agent's real transaction core,
// fed a stream of (direction, bytes) records twice — each record whole, then in pieces — and the promises
// every target checks:
//  - the rows (kind, text, params, rows, changes, bytes, error, attributes) are the same however the records
//    are cut: the parser's state does not depend on where the program's calls split the bytes;
//  - once stopped, it stays stopped and takes no bytes;
//  - what it keeps stays bounded: at most kMaxPending messages owed, kMaxStatements named statements
//    (plus the unnamed one);
//  - no row holds a PasswordMessage's bytes (kSecret, in the backend target's conversation).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/recorder.h"
#include "core/transaction.h"
#include "protocols/pg/pg_conn.h"

namespace txray::pg::fuzz {

inline constexpr const char* kSecret = "pw-SECRET-marker";

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
    s += std::to_string(int(st.kind)) + "|" + std::string(st.text.view()) + "|" + std::to_string(st.rows) + "|" +
         std::to_string(st.changes) + "|" + std::to_string(st.bytes_read) + "|" + std::to_string(st.bytes_written) + "|" + st.error;
    for (const Attr& a : st.attrs) s += "|" + a.key + "=" + a.value;
    s += "\n";
  }
  return s;
}

// Replays the records into one transaction; piece > 0 cuts every record into parts of 1..piece bytes
// (the sizes taken in turn from the record's own bytes, so that they vary).
inline std::string replay(const std::vector<Record>& recs, size_t piece, bool secret) {
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
  env.peer = "127.0.0.1:5432";
  Transaction* t = tx::begin("fuzz", "test");
  tx::make_current(t);
  std::string result;
  {
    PgConn c(env, current_tx);
    bool was_stopped = false;
    for (const Record& r : recs) {
      size_t at = 0, k = 0;
      while (at < r.bytes.size()) {
        size_t n = r.bytes.size() - at;
        if (piece) n = std::min(n, 1 + size_t(uint8_t(r.bytes[k++ % r.bytes.size()])) % piece);
        const char* p = r.bytes.data() + at;
        if (r.sent) slot.add_written(n), c.on_sent(p, n);
        else slot.add_read(n), c.on_received(p, n);
        at += n;
        if (was_stopped && !c.stopped()) fail("stopped, then not");
        was_stopped = c.stopped();
        if (c.pending() > PgConn::kMaxPending) fail("more messages owed than the bound");
        if (c.statements() > PgConn::kMaxStatements + 1) fail("more statements than the bound");
      }
    }
    c.on_end("end");
  }
  tx::end(t, 200, "");
  tx::make_current(nullptr);
  if (!done().empty()) result = describe(*done().back());
  // A server may say anything, the marker too (libFuzzer learns it from this very check): only the
  // program's PasswordMessage must never reach a row.
  bool server_said_it = false;
  for (const Record& r : recs) server_said_it |= !r.sent && r.bytes.find(kSecret) != std::string::npos;
  if (secret && !server_said_it && result.find(kSecret) != std::string::npos) fail("a password reached a row", result);
  done().clear();
  return result;
}

// secret: the records hold a PasswordMessage with kSecret, which no row may show.
inline void check(const std::vector<Record>& recs, bool secret = false) {
  std::string whole = replay(recs, 0, secret);
  for (size_t piece : {1, 7}) {
    std::string cut = replay(recs, piece, secret);
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

}  // namespace txray::pg::fuzz
