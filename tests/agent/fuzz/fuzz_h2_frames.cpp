// libFuzzer target: the HTTP/2 frame layer (agent/core/h2_frames.cpp with libnghttp2's HPACK inflater),
// the inbound connection tracker (h2_conn.cpp, with the agent's real transaction core) and the outbound
// one (h2_client.cpp). They run in the host on every byte of a connection that began with the HTTP/2
// preface: garbage, a lost preface, a connection joined mid-stream or a hostile peer must make them give
// the connection up, never crash, leak or loop. Promises checked:
//  - the same bytes in any pieces give the same transactions (server side: name, status, error, bytes,
//    attributes) and the same calls (client side: stream, status, grpc-status, bytes, error);
//  - every call announced to the sink ends exactly once, every transaction begun is ended (ASan's leak
//    check sees a transaction never handed to the sink);
//  - a transaction or call never counts more bytes than were passed.
//
// Input: byte 0 = mode (bit 0: server side, else client side; bit 1: the preface is put first), then
// records [op][len hi][len lo][len bytes]: op % 3 = 0 the program read them, 1 it wrote them, 2 it closed
// the connection (len 0).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "h2_client.h"
#include "h2_conn.h"
#include "h2_frames.h"
#include "transaction.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, const std::string& a = {}, const std::string& b = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%s]\n  [%s]\n", what, a.c_str(), b.c_str());
  abort();
}

std::vector<std::unique_ptr<Transaction>> g_done;
void collect(Transaction* t) { g_done.emplace_back(t); }

struct Record {
  int op;
  std::string bytes;
};

std::string describe(const Transaction& t) {
  std::string s = t.name + "|" + t.kind + "|" + std::to_string(t.status) + "|" + t.error + "|" +
                  std::to_string(t.bytes_read) + "|" + std::to_string(t.bytes_written) + "|" +
                  std::to_string(t.parent_span_id);
  for (const Attr& a : t.attrs) s += "|" + a.key + "=" + a.value;
  return s;
}

class Sink final : public H2CallSink {
 public:
  std::vector<std::string> log;
  int open = 0;
  void on_request(H2Call& c, const h2::HeaderList& h) override {
    ++open;
    log.push_back("req " + std::to_string(c.stream) + " " + std::string(h.get(":path")) + (c.grpc ? " grpc" : ""));
  }
  void on_first_byte(H2Call& c) override { log.push_back("fb " + std::to_string(c.stream)); }
  void on_response(H2Call& c, std::string_view error) override {
    if (--open < 0) fail("a call ended twice (or was never announced)");
    log.push_back("resp " + std::to_string(c.stream) + " " + std::to_string(c.status) + " " +
                  std::to_string(c.grpc_status) + " " + c.grpc_message + " R=" + std::to_string(c.response_bytes) +
                  " W=" + std::to_string(c.request_bytes) + " " + std::string(error));
  }
};

// Runs the records through one side; `piece` > 0 cuts every record into pieces of that size.
std::vector<std::string> run(bool server, const std::vector<Record>& recs, size_t piece, uint64_t* read,
                             uint64_t* written) {
  std::vector<std::string> out;
  *read = *written = 0;
  auto feed = [&](auto&& fn, const std::string& b) {
    size_t step = piece ? piece : (b.empty() ? 1 : b.size());
    for (size_t i = 0; i < b.size(); i += step) fn(b.data() + i, std::min(step, b.size() - i));
  };
  if (server) {
    g_done.clear();
    {
      auto s = std::make_unique<H2Server>();
      s->reset("fuzz");
      for (const Record& r : recs) {
        if (r.op == 0) feed([&](const char* p, size_t n) { s->on_read(p, n); }, r.bytes), *read += r.bytes.size();
        else if (r.op == 1) feed([&](const char* p, size_t n) { s->on_write(p, n); }, r.bytes), *written += r.bytes.size();
        else s->on_close();
      }
      s->on_close();
      if (s->open_streams() != 0) fail("streams left open after close");
    }
    for (auto& t : g_done) {
      if (t->bytes_read > *read || t->bytes_written > *written) fail("a transaction counts more bytes than passed", describe(*t));
      out.push_back(describe(*t));
    }
    g_done.clear();
  } else {
    Sink sink;
    auto c = std::make_unique<H2Client>();
    c->reset();
    for (const Record& r : recs) {
      if (r.op == 0) feed([&](const char* p, size_t n) { c->on_received(p, n, sink); }, r.bytes), *read += r.bytes.size();
      else if (r.op == 1) feed([&](const char* p, size_t n) { c->on_sent(p, n, sink); }, r.bytes), *written += r.bytes.size();
      else c->on_end(sink, "closed");
    }
    c->on_end(sink, "closed");
    if (sink.open != 0) fail("a call announced was never ended");
    if (c->open_calls() != 0) fail("calls left open after the end");
    out = std::move(sink.log);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tx::set_sink(collect);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  bool server = data[0] & 1;
  std::vector<Record> recs;
  if (data[0] & 2) recs.push_back({server ? 0 : 1, std::string(h2::kPreface)});
  size_t i = 1;
  while (i + 3 <= size && recs.size() < 256) {
    int op = data[i] % 3;
    size_t len = (size_t(data[i + 1]) << 8) | data[i + 2];
    i += 3;
    if (len > size - i) len = size - i;
    recs.push_back({op, std::string(reinterpret_cast<const char*>(data + i), op == 2 ? 0 : len)});
    if (op != 2) i += len;
  }
  uint64_t r1, w1, r2, w2;
  std::vector<std::string> whole = run(server, recs, 0, &r1, &w1);
  size_t piece = 1 + data[0] / 4 % 13;
  std::vector<std::string> cut = run(server, recs, piece, &r2, &w2);
  if (whole != cut) {
    std::string a, b;
    for (auto& s : whole) a += s + "\n";
    for (auto& s : cut) b += s + "\n";
    fail("pieces changed the result", a, b);
  }
  return 0;
}
