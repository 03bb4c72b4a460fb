// Shared by the Redis and memcached wire clients' fuzz targets (fuzz_redis_*.cpp, fuzz_memcached_*.cpp):
// a WireClient (agent/protocols/redis, agent/protocols/memcached) with the agent's real transaction core,
// fed (direction, bytes) records twice — each record whole, then in pieces — and the promises every
// target checks:
//  - the rows and summary lines (text, attributes, bytes, error, counts) are the same however the records
//    are cut: the parser's state does not depend on where the program's calls split the bytes;
//  - the bytes handed to the client are unchanged after each call (it never writes into the program's
//    buffers);
//  - once stopped, it stays stopped, and a stopped connection was counted exactly once
//    (streams_unparsed); a connection that was not stopped counts nothing;
//  - exact byte accounting while the stream is followed to its end: every byte the program wrote is in
//    exactly one command's row (or its summary line), but for Redis's empty lines between commands; every byte it read is in at most one, and for
//    memcached in exactly one (it has no messages that answer no command);
//  - the transaction's call count is the number of commands recorded (rows plus summarised ones);
//  - no row holds a secret (kSecret) that the target put in a value or in AUTH/HELLO's arguments before
//    the fuzz input (checked when the fuzz input itself does not hold it: a key may).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/fd_table.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "protocols/dispatch/wire_client.h"

namespace txray::cachefuzz {

inline constexpr const char* kSecret = "pw-SECRET-marker";

struct Record {
  bool sent;
  std::string bytes;
};

using Make = WireClient* (*)(const WireEnv&, Transaction* (*)(ReqRef&));
// Of a whole stream the program wrote that the client followed to its end: the bytes that belong to no
// command (nullptr: none do).
using Uncounted = uint64_t (*)(const std::string& sent);

// Redis: empty lines between commands ("\r\n", "\n") are inline commands the server skips without a
// reply, no command's bytes. A framer of RESP's arrays of bulk strings, from the protocol's
// specification, that counts them.
inline uint64_t redis_blank_lines(const std::string& s) {
  uint64_t blank = 0;
  size_t i = 0;
  auto number = [&](char type, int64_t* v) {
    if (i >= s.size() || s[i] != type) return false;
    size_t e = s.find("\r\n", i);
    if (e == std::string::npos) return false;
    *v = strtoll(s.c_str() + i + 1, nullptr, 10);
    i = e + 2;
    return true;
  };
  while (i < s.size()) {
    if (s[i] == '\n' || s[i] == '\r') {
      ++blank, ++i;
      continue;
    }
    int64_t args, len;
    if (!number('*', &args)) return blank;  // the rest is a command cut short (or not RESP: stopped)
    for (int64_t a = 0; a < args; ++a) {
      if (!number('$', &len) || len < 0 || s.size() - i < uint64_t(len) + 2) return blank;
      i += size_t(len) + 2;
    }
  }
  return blank;
}

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

struct Outcome {
  std::string rows;  // every row and summary line of `kind`, one a line
  uint64_t read = 0, written = 0, commands = 0;
  uint64_t calls = 0;  // the transaction's call count
};

inline Outcome describe(const Transaction& t, StepKind kind) {
  Outcome o;
  for (const Step& st : t.steps) {
    if (st.kind != kind) continue;
    o.rows += std::string(st.text.view()) + "|R=" + std::to_string(st.bytes_read) + "|W=" +
              std::to_string(st.bytes_written) + "|" + st.error;
    for (const Attr& a : st.attrs) o.rows += "|" + a.key + "=" + a.value;
    o.rows += "\n";
    o.read += st.bytes_read;
    o.written += st.bytes_written;
    ++o.commands;
  }
  for (const StepSummary& s : t.summary) {
    if (s.kind != kind) continue;
    o.rows += "summary " + s.text + "|n=" + std::to_string(s.count) + "|errors=" + std::to_string(s.errors) +
              "|R=" + std::to_string(s.bytes_read) + "|W=" + std::to_string(s.bytes_written) + "\n";
    o.read += s.bytes_read;
    o.written += s.bytes_written;
    o.commands += s.count;
  }
  o.calls = t.totals.call_count;
  return o;
}

// Replays the records into one transaction; piece > 0 cuts every record into parts of 1..piece bytes
// (the sizes taken in turn from the record's own bytes, so that they vary). reads_exact: every byte read
// belongs to a command (memcached).
inline std::string replay(const std::vector<Record>& recs, size_t piece, Make make, StepKind kind, bool reads_exact,
                          bool secret, Uncounted uncounted) {
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
  env.peer = "127.0.0.1:6379";
  Transaction* t = tx::begin("fuzz", "test");
  tx::make_current(t);
  uint64_t unparsed_before = counters().streams_unparsed.load();
  uint64_t sent = 0, received = 0;
  std::string sent_bytes;
  bool stopped = false;
  {
    std::unique_ptr<WireClient> c(make(env, current_tx));
    if (!c) return {};
    std::string copy;
    for (const Record& r : recs) {
      size_t at = 0, k = 0;
      while (at < r.bytes.size() && !c->stopped()) {
        size_t n = r.bytes.size() - at;
        if (piece) n = std::min(n, 1 + size_t(uint8_t(r.bytes[k++ % r.bytes.size()])) % piece);
        // the client gets a buffer of its own, checked afterwards: it never changes the program's bytes
        copy.assign(r.bytes, at, n);
        if (r.sent) {
          slot.add_written(n);
          c->on_sent(copy.data(), n);
          sent += n;
          sent_bytes += copy;
        } else {
          slot.add_read(n);
          c->on_received(copy.data(), n);
          received += n;
        }
        if (copy.compare(0, n, r.bytes, at, n) != 0) fail("the client changed the program's bytes");
        at += n;
        if (stopped && !c->stopped()) fail("stopped, then not");
        stopped = c->stopped();
      }
    }
    c->on_end("end");
    if (stopped && !c->stopped()) fail("stopped, then not (after the end)");
  }
  uint64_t unparsed = counters().streams_unparsed.load() - unparsed_before;
  if (unparsed != (stopped ? 1u : 0u)) fail("a stopped stream not counted once", std::to_string(unparsed));
  tx::end(t, 200, "");
  tx::make_current(nullptr);
  if (done().empty()) fail("no transaction");
  Outcome o = describe(*done().back(), kind);
  done().clear();
  if (o.calls != o.commands) fail("call count is not the number of commands", o.rows, std::to_string(o.calls));
  if (!stopped) {
    uint64_t none = uncounted ? uncounted(sent_bytes) : 0;
    if (o.written != sent - none) fail("bytes written not in exactly one row", o.rows, std::to_string(sent - none));
    if (reads_exact ? o.read != received : o.read > received)
      fail("bytes read not accounted for", o.rows, std::to_string(received));
  } else if (o.written > sent || o.read > received) {
    fail("rows hold more bytes than went by", o.rows);
  }
  if (secret && o.rows.find(kSecret) != std::string::npos) fail("a secret reached a row", o.rows);
  return o.rows + (stopped ? "stopped\n" : "");
}

inline void check(const std::vector<Record>& recs, Make make, StepKind kind, bool reads_exact, bool secret = false,
                  Uncounted uncounted = nullptr) {
  std::string whole = replay(recs, 0, make, kind, reads_exact, secret, uncounted);
  for (size_t piece : {1, 7}) {
    std::string cut = replay(recs, piece, make, kind, reads_exact, secret, uncounted);
    if (cut != whole) fail("rows differ with the records cut in pieces", whole, cut);
  }
}

// Whether the fuzz input holds the secret itself (then a row may show it: it is a key).
inline bool holds_secret(const uint8_t* data, size_t size) {
  return memmem(data, size, kSecret, strlen(kSecret)) != nullptr;
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

}  // namespace txray::cachefuzz
