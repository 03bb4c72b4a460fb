// libFuzzer target: the uwsgi client (agent/protocols/uwsgi/uwsgi_client.cpp) as nginx's uwsgi_pass
// drives it, with the agent's real transaction core: the program's writes go through plan_write /
// commit_write as the write hook does (http_out.cpp: wire_write_through) under a kernel that takes at most
// `cap` bytes per call (the input's first byte), its reads through on_received, and connection ends make
// the next connection's client; sendfile records (kind 3) are counted as body or refused (then, as the
// dispatch does, the connection is no longer followed). Input: records (fuzz_uwsgi_common.h). Checked:
//  - the program is told exactly its own bytes were written, never more than it gave, and its writes
//    always progress;
//  - the wire is the program's bytes but for edits at the start of a write, each a packet header whose
//    datasize grew by exactly the vars that follow it (within 16 bits, modifiers unchanged), those vars
//    being HTTP_TRACEPARENT (a valid one) and optionally HTTP_TRACESTATE and HTTP_BAGGAGE;
//  - the rows (text, status, error, bytes, attributes) are the same whatever the kernel's cap and
//    however the reads are cut; every row is closed once its connection ended;
//  - once stopped, a client stays stopped, inserts nothing and takes no bytes.
#include <algorithm>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/fd_table.h"
#include "core/recorder.h"
#include "fuzz_uwsgi_common.h"
#include "protocols/tracecontext/traceparent.h"
#include "protocols/uwsgi/uwsgi_client.h"
#include "protocols/uwsgi/uwsgi_packet.h"

using namespace txray;
using namespace txray::uwsgi::fuzz;

namespace {

struct Wire {
  std::string prog, wire;
  std::vector<size_t> write_starts;  // program offsets where a write began
};

uint16_t le16(const std::string& s, size_t at) { return uint16_t(uint8_t(s[at]) | uint8_t(s[at + 1]) << 8); }

// The vars the client may insert: HTTP_TRACEPARENT first (valid), then HTTP_TRACESTATE, HTTP_BAGGAGE.
bool context_vars(std::string_view v) {
  size_t i = 0, n = 0;
  while (i < v.size()) {
    if (i + 2 > v.size()) return false;
    size_t kl = le16(std::string(v.substr(i, 2)), 0);
    if (i + 2 + kl + 2 > v.size()) return false;
    std::string_view key = v.substr(i + 2, kl);
    size_t vl = le16(std::string(v.substr(i + 2 + kl, 2)), 0);
    if (i + 4 + kl + vl > v.size()) return false;
    std::string_view val = v.substr(i + 4 + kl, vl);
    if (n == 0) {
      TraceParent tp;
      if (key != "HTTP_TRACEPARENT" || !parse_traceparent(val, tp)) return false;
    } else if (key != "HTTP_TRACESTATE" && key != "HTTP_BAGGAGE") {
      return false;
    }
    i += 4 + kl + vl;
    ++n;
  }
  return n > 0;
}

void check_wire(const Wire& w) {
  size_t i = 0, j = 0, s = 0;
  while (i < w.wire.size()) {
    while (s < w.write_starts.size() && w.write_starts[s] < j) ++s;
    // An edit begins at a write's start, and a write whose edit was made was told at least the 4 header
    // bytes went out: the next write starts 4 or more bytes later.
    bool at_start = s < w.write_starts.size() && w.write_starts[s] == j &&
                    (s + 1 == w.write_starts.size() || w.write_starts[s + 1] >= j + 4);
    if (j < w.prog.size() && w.wire[i] == w.prog[j] &&
        !(at_start && j + 4 <= w.prog.size() && i + 4 <= w.wire.size() && w.wire.compare(i, 4, w.prog, j, 4) != 0)) {
      ++i, ++j;
      continue;
    }
    // An edit: a header with its datasize grown, then the inserted vars.
    if (!at_start || j + 4 > w.prog.size() || i + 4 > w.wire.size()) fail("the wire differs from the program", w.wire, w.prog);
    if (w.wire[i] != w.prog[j] || w.wire[i + 3] != w.prog[j + 3]) fail("modifiers changed", w.wire, w.prog);
    uint16_t was = le16(w.prog, j + 1), now = le16(w.wire, i + 1);
    if (now <= was) fail("datasize not grown", w.wire, w.prog);
    size_t x = size_t(now - was);
    if (i + 4 + x > w.wire.size()) fail("inserted vars cut short", w.wire, w.prog);
    if (!context_vars(std::string_view(w.wire).substr(i + 4, x))) fail("inserted bytes are not context vars", w.wire);
    i += 4 + x;
    j += 4;
  }
  if (j != w.prog.size()) fail("program bytes missing from the wire", w.wire, w.prog);
}

std::string describe(const Transaction& t) {
  std::string s;
  for (const Step& st : t.steps) {
    if (st.kind != StepKind::HTTP_CALL) continue;
    if (st.open) fail("a call row still open after its connection ended");
    s += std::string(st.text.view()) + "|" + std::to_string(st.status) + "|" + st.error + "|" +
         std::to_string(st.bytes_read) + "|" + std::to_string(st.bytes_written) + describe_attrs(st.attrs) + "\n";
  }
  return s;
}

std::string replay(const std::vector<Record>& recs, size_t cap, size_t piece, Wire* w) {
  install_sink();
  done().clear();
  counters().reset();
  uwsgi::set_propagate_for_test(1);
  FdSlot slot;
  slot.kind.store(FdKind::outbound);
  ReqRef owner;
  WireEnv env{&slot, "127.0.0.1:3031", &owner};
  Transaction* t = tx::begin("fuzz", "test");
  tx::make_current(t);
  t->tracestate = "vendor=fuzz";
  {
    std::unique_ptr<WireClient> c(uwsgi::make_client(env));
    bool was_stopped = false;
    bool stopped_for_good = false;  // until the next connection
    for (const Record& r : recs) {
      if (r.kind == 2) {  // the connection ends
        c->on_end("closed by the server");
        c.reset(uwsgi::make_client(env));
        was_stopped = stopped_for_good = false;
        continue;
      }
      if (r.kind == 3) {  // sendfile(2): bytes the client does not see; refused, the dispatch lets it go
        std::string filler(r.bytes.size() * 7, 'F');
        w->write_starts.push_back(w->prog.size());
        w->prog += filler;
        w->wire += filler;
        if (!c->stopped() && !c->on_sent_opaque(filler.size())) {
          c->on_end("not followed (sendfile)");
          c.reset(uwsgi::make_client(env));
          stopped_for_good = true;  // the dispatch's connection is a plain socket from here on
        }
        continue;
      }
      if (r.bytes.empty()) continue;
      if (r.kind == 0) {
        size_t at = 0, k = 0;
        while (at < r.bytes.size()) {
          size_t n = r.bytes.size() - at;
          if (piece) n = std::min(n, 1 + size_t(uint8_t(r.bytes[k++ % r.bytes.size()])) % piece);
          if (!c->stopped() && !stopped_for_good) c->on_received(r.bytes.data() + at, n);
          at += n;
        }
      } else {
        // The program writes the record until all of it went out, as a blocking writer does.
        size_t off = 0;
        while (off < r.bytes.size()) {
          w->write_starts.push_back(w->prog.size() + off);
          iovec iov{const_cast<char*>(r.bytes.data() + off), r.bytes.size() - off};
          iovec out[1 + WireClient::kWriteExtra];
          int k = c->stopped() || stopped_for_good ? 0 : c->plan_write(&iov, 1, out);
          if (c->stopped() && was_stopped && k) fail("a stopped client inserts");
          size_t mine;
          if (k == 0) {
            mine = std::min(cap, iov.iov_len);
            w->wire.append(r.bytes, off, mine);
          } else {
            int rounds = 0;
            for (;;) {
              std::string lay;
              for (int i = 0; i < k; ++i) lay.append(static_cast<const char*>(out[i].iov_base), out[i].iov_len);
              size_t acc = std::min(cap, lay.size());
              w->wire.append(lay, 0, acc);
              mine = c->commit_write(acc);
              if (mine > 0 || acc == 0) break;
              if (++rounds > 10000) fail("a write that never progresses");
              k = c->plan_write(&iov, 1, out);
              if (k == 0) out[0] = iov, k = 1;
            }
          }
          if (mine > iov.iov_len) fail("told more bytes written than given");
          if (mine == 0) fail("a write that took nothing");
          if (!c->stopped() && !stopped_for_good) c->on_sent(r.bytes.data() + off, mine);
          off += mine;
        }
        w->prog += r.bytes;
      }
      if (was_stopped && !c->stopped()) fail("stopped, then not");
      was_stopped = c->stopped();
    }
    c->on_end({});
  }
  tx::end(t, 200, "");
  tx::make_current(nullptr);
  std::string result = done().empty() ? std::string() : describe(*done().back());
  done().clear();
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t cap = 1 + data[0] % 64;
  if (data[0] & 0x80) cap = 1 << 20;
  std::vector<Record> recs = records(data + 1, size - 1);
  Wire big, small, cut;
  std::string a = replay(recs, 1 << 20, 0, &big);
  check_wire(big);
  std::string b = replay(recs, cap, 0, &small);
  check_wire(small);
  std::string c = replay(recs, cap, 7, &cut);
  check_wire(cut);
  if (a != b) fail("rows differ with the kernel's cap", a, b);
  if (b != c) fail("rows differ with the reads cut in pieces", b, c);
  return 0;
}
