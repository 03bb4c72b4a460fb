// libFuzzer target: FastCGI as a front such as nginx's fastcgi_pass speaks it (agent/protocols/fastcgi/
// fastcgi_client.h with the splice injector of splice.h and the agent's real transaction core): the
// records the program writes go through the write hook's loop (http_out.cpp: wire_write_through —
// plan_write, a kernel that takes some bytes, commit_write, the program told its own count and writing
// the rest), the records it reads go to on_received. Input: [d|len_hi][len_lo][bytes…] records (bit 7:
// 1 = one write of the program, 0 = one read). Replayed with a kernel that takes everything, with one that
// takes 1..7 bytes a call (the sizes from the input), the program's bytes in two iovecs cut anywhere (the
// rest of a write taken in part written at once, or after the reads that follow it), and with the
// insertion turned off. Checked:
//  - the program is told exactly its own bytes: each call's count within what it offered, every write
//    done in the end, never a call that makes no progress for ever;
//  - the wire is the program's bytes with nothing but PARAMS records of trace context inserted, each just
//    before the first PARAMS record of a request (after its BEGIN_REQUEST), for that request id: a
//    well-formed record (version 1, no padding) whose pairs are HTTP_TRACEPARENT with the front's trace id
//    and then at most HTTP_TRACESTATE and HTTP_BAGGAGE with the front's values, and whose span id is the
//    id of the request's call row; at most one per request;
//  - with the insertion off the wire is byte for byte the program's;
//  - the call rows (text, method, status, error, bytes) are the same for every kernel and with the
//    insertion off; a stream given up is counted once (streams_unparsed).
// Seeds: nginx's records and php-fpm's answers (fcgi_bytes.h's shapes and a capture of nginx 1.22 →
// php-fpm 8.2), made by make_cache_seeds.py.
#include <sys/uio.h>

#include <algorithm>
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
#include "protocols/fastcgi/fastcgi_client.h"

using namespace txray;

namespace {

struct Record {
  bool sent;
  std::string bytes;
};

[[noreturn]] void fail(const char* what, const std::string& a = {}, const std::string& b = {}) {
  fprintf(stderr, "invariant broken: %s\n--- one\n%s\n--- other\n%s\n", what, a.c_str(), b.c_str());
  abort();
}

std::vector<std::unique_ptr<Transaction>>& done() {
  static auto* v = new std::vector<std::unique_ptr<Transaction>>();
  return *v;
}
void collect(Transaction* t) { done().emplace_back(t); }

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) snprintf(b, sizeof b, "%02x", p[i]), s += b;
  return s;
}

constexpr std::string_view kTracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
constexpr std::string_view kBaggage = "userId=alice";

// Where the program's stream has a request's first PARAMS record after its BEGIN_REQUEST (the only
// places an insertion may be), from the record layer of the specification; cut at the first header
// that is not FastCGI 1.
struct Spot {
  size_t at;
  uint16_t id;
};
std::vector<Spot> insertion_spots(const std::string& prog) {
  std::vector<Spot> spots;
  std::vector<uint16_t> begun;  // ids begun whose first PARAMS record was not seen yet
  size_t i = 0;
  while (i + 8 <= prog.size()) {
    auto u = [&](size_t k) { return uint8_t(prog[i + k]); };
    if (u(0) != 1 || u(1) < 1 || u(1) > 11) break;
    uint16_t id = uint16_t(u(2) << 8 | u(3));
    size_t len = 8 + size_t(u(4) << 8 | u(5)) + u(6);
    auto it = std::find(begun.begin(), begun.end(), id);
    if (u(1) == 1 && id && it == begun.end()) begun.push_back(id);
    if (u(1) == 4 && it != begun.end()) {
      spots.push_back({i, id});
      begun.erase(it);
    }
    i += len;
  }
  return spots;
}

// Checks one inserted record at wire[j..]: returns its length and its span id (0: not an insertion).
size_t inserted_record(const std::string& wire, size_t j, uint16_t id, const std::string& trace_hex, uint64_t* span) {
  *span = 0;
  if (j + 8 > wire.size()) return 0;
  auto u = [&](size_t k) { return uint8_t(wire[j + k]); };
  if (u(0) != 1 || u(1) != 4) return 0;
  size_t content = size_t(u(4) << 8 | u(5));
  if (j + 8 + content > wire.size()) return 0;
  std::string_view c(wire.data() + j + 8, content);
  // the first pair: HTTP_TRACEPARENT (16) = "00-<trace>-<span>-<flags>" (55)
  if (c.size() < 2 + 16 + 55 || uint8_t(c[0]) != 16 || uint8_t(c[1]) != 55 || c.substr(2, 16) != "HTTP_TRACEPARENT")
    return 0;
  std::string_view tp = c.substr(18, 55);
  if (tp.substr(0, 3) != "00-" || tp.substr(3, 32) != trace_hex) return 0;  // the program's own record
  // from here on it is the agent's: everything must be right
  if (uint16_t(u(2) << 8 | u(3)) != id) fail("an inserted record for another request id");
  if (u(6) != 0 || u(7) != 0) fail("an inserted record with padding or a reserved byte");
  if (tp[35] != '-' || tp[52] != '-') fail("an inserted traceparent malformed", std::string(tp));
  uint64_t s = 0;
  for (char ch : tp.substr(36, 16)) {
    int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (v < 0) fail("an inserted span id not lowercase hex", std::string(tp));
    s = s << 4 | uint64_t(v);
  }
  if (!s) fail("an inserted span id of 0");
  size_t k = 73;
  for (auto [name, value] : {std::pair{std::string_view("HTTP_TRACESTATE"), kTracestate},
                             std::pair{std::string_view("HTTP_BAGGAGE"), kBaggage}}) {
    if (k == c.size()) break;
    if (k + 2 + name.size() + value.size() > c.size() || uint8_t(c[k]) != name.size() ||
        uint8_t(c[k + 1]) != value.size() || c.substr(k + 2, name.size()) != name ||
        c.substr(k + 2 + name.size(), value.size()) != value)
      fail("an inserted pair other than the front's tracestate and baggage");
    k += 2 + name.size() + value.size();
  }
  if (k != c.size()) fail("an inserted record with bytes after its pairs");
  *span = s;
  return 8 + content;
}

struct Outcome {
  std::string rows;
  std::vector<uint64_t> spans;      // inserted, in wire order
  std::vector<uint64_t> row_ids;    // the call rows' ids
  bool stopped = false;
};

std::string describe_rows(const Transaction& t, std::vector<uint64_t>* ids) {
  std::string s;
  for (const Step& st : t.steps) {
    if (st.kind != StepKind::HTTP_CALL) continue;
    ids->push_back(st.id);
    s += std::string(st.text.view()) + "|" + std::to_string(st.status) + "|R=" + std::to_string(st.bytes_read) +
         "|W=" + std::to_string(st.bytes_written) + "|" + st.error;
    for (const Attr& a : st.attrs)
      if (a.key != "ttfb_us") s += "|" + a.key + "=" + a.value;  // a time
    s += "\n";
  }
  for (const StepSummary& su : t.summary)
    if (su.kind == StepKind::HTTP_CALL)
      s += "summary " + su.text + "|n=" + std::to_string(su.count) + "|R=" + std::to_string(su.bytes_read) + "|W=" +
           std::to_string(su.bytes_written) + "\n";
  return s;
}

// kernel: 0 takes everything, else 1..kernel bytes a call; cuts: the program's rest in two iovecs.
Outcome replay(const std::vector<Record>& recs, size_t kernel, bool cuts, bool propagate, bool pause = false) {
  static bool init = [] {
    tx::set_sink(collect);
    return true;
  }();
  (void)init;
  done().clear();
  fcgi::set_propagate_for_test(propagate ? 1 : 0);
  Transaction* front = tx::begin("GET /front", "http");
  front->tracestate.assign(kTracestate);
  front->baggage.assign(kBaggage);
  tx::make_current(front);
  const std::string trace_hex = hex(front->trace_id, 16);
  uint64_t unparsed0 = counters().streams_unparsed.load();
  FdSlot slot;
  slot.kind.store(FdKind::outbound);
  ReqRef owner;
  WireEnv env{&slot, "127.0.0.1:9000", &owner};
  std::unique_ptr<WireClient> c(fcgi::make_client(env));
  if (!c) fail("no client");
  std::string prog, wire;
  size_t turn = 0;
  // What the program still has to write: a write the kernel took in part goes on with the rest, at
  // once, or (pause) only after the reads that follow it — as a program on a non-blocking socket waits
  // for it to be writable and meanwhile reads.
  std::string owed;
  auto write_owed = [&](bool may_pause) {
    int calls = 0;
    while (!owed.empty()) {
      if (++calls > 100000) fail("a write that makes no progress");
      size_t rest = owed.size();
      auto next = [&] { return size_t(uint8_t(prog[turn++ % prog.size()])); };
      iovec iov[2];
      int cnt = 1;
      size_t cut = cuts && rest > 1 ? 1 + next() % (rest - 1) : rest;
      iov[0] = {owed.data(), cut};
      if (cut < rest) iov[1] = {owed.data() + cut, rest - cut}, cnt = 2;
      iovec out[2 + WireClient::kWriteExtra];
      size_t mine;
      int k = c->stopped() ? 0 : c->plan_write(iov, cnt, out);
      if (!propagate && k) fail("an insertion planned with propagation off");
      if (k == 0) {
        mine = kernel ? std::min(rest, 1 + next() % kernel) : rest;
        wire.append(owed, 0, mine);
      } else {
        if (k > 2 + WireClient::kWriteExtra) fail("more iovecs than the room promised");
        for (int tries = 0;; ++tries) {
          if (tries > 100000) fail("pending bytes that never go out");
          std::string lay;
          for (int i = 0; i < k; ++i) lay.append(static_cast<const char*>(out[i].iov_base), out[i].iov_len);
          size_t took = kernel ? std::min(lay.size(), 1 + next() % kernel) : lay.size();
          wire.append(lay, 0, took);
          mine = c->commit_write(took);
          if (mine > 0 || took == 0) break;
          k = c->plan_write(iov, cnt, out);
          if (k == 0) std::copy(iov, iov + cnt, out), k = cnt;
        }
      }
      if (mine > rest) fail("the program told more bytes than it wrote");
      slot.add_written(mine);
      if (!c->stopped() && mine) {
        // as wire_sent: iovec by iovec
        size_t left = mine;
        for (int i = 0; i < cnt && left && !c->stopped(); ++i) {
          size_t take = std::min(iov[i].iov_len, left);
          c->on_sent(static_cast<const char*>(iov[i].iov_base), take);
          left -= take;
        }
      }
      owed.erase(0, mine);
      if (may_pause && !owed.empty()) return;
    }
  };
  for (const Record& r : recs) {
    if (!r.sent) {
      if (!c->stopped()) c->on_received(r.bytes.data(), r.bytes.size());
      continue;
    }
    prog += r.bytes;
    owed += r.bytes;
    write_owed(pause);
  }
  write_owed(false);
  bool stopped = c->stopped();
  c->on_end("end");
  c.reset();
  uint64_t unparsed = counters().streams_unparsed.load() - unparsed0;
  if (unparsed != (stopped ? 1u : 0u)) fail("a stream given up not counted once", std::to_string(unparsed));
  tx::end(front, 200, "");
  tx::make_current(nullptr);
  fcgi::set_propagate_for_test(-1);
  Outcome o;
  o.stopped = stopped;
  if (done().empty()) fail("no transaction");
  o.rows = describe_rows(*done().back(), &o.row_ids);
  done().clear();

  // The wire against the program's bytes.
  if (!propagate && wire != prog) fail("bytes changed with the insertion off");
  std::vector<Spot> spots = insertion_spots(prog);
  size_t i = 0, j = 0;
  for (size_t s = 0; s <= spots.size(); ++s) {
    size_t upto = s < spots.size() ? spots[s].at : prog.size();
    if (wire.size() - j < upto - i || wire.compare(j, upto - i, prog, i, upto - i) != 0)
      fail("the wire is not the program's bytes where nothing may be inserted");
    j += upto - i;
    i = upto;
    if (s == spots.size()) break;
    uint64_t span;
    if (size_t len = inserted_record(wire, j, spots[s].id, trace_hex, &span)) {
      o.spans.push_back(span);
      j += len;
    }
  }
  if (j != wire.size()) fail("bytes on the wire after the program's");
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Record> recs;
  for (size_t i = 0; i + 2 <= size;) {
    bool sent = data[i] & 0x80;
    size_t len = size_t(data[i] & 0x7f) << 8 | data[i + 1];
    i += 2;
    len = std::min(len, size - i);
    if (len) recs.push_back({sent, std::string(reinterpret_cast<const char*>(data + i), len)});
    i += len;
  }
  Outcome whole = replay(recs, 0, false, true);
  Outcome small = replay(recs, 7, true, true);
  Outcome off = replay(recs, 0, false, false);
  // the rest of a write the kernel took in part written after the reads that follow it: replies may
  // then come before a request's last bytes (its row's bytes differ), but the wire must stay right
  Outcome paused = replay(recs, 7, true, true, true);
  for (const Outcome* o : {&small, &off})
    if (o->rows != whole.rows || o->stopped != whole.stopped) fail("call rows differ with the kernel or the insertion", whole.rows, o->rows);
  // each insertion names its request's call row (while rows are not folded into summaries); none twice
  for (const Outcome* o : {&whole, &small, &paused}) {
    if (o->rows.find("summary ") != std::string::npos) continue;
    std::vector<uint64_t> s = o->spans;
    std::sort(s.begin(), s.end());
    if (std::adjacent_find(s.begin(), s.end()) != s.end()) fail("one span inserted twice");
    for (uint64_t sp : o->spans)
      if (std::find(o->row_ids.begin(), o->row_ids.end(), sp) == o->row_ids.end())
        fail("an inserted span that is no call row's id", std::to_string(sp), o->rows);
  }
  return 0;
}
