// libFuzzer target: the HTTP/2 frame layer (agent/protocols/http2/h2_frames.cpp with libnghttp2's HPACK inflater),
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
// Input: byte 0 = mode (bit 0: server side, else client side; bit 1: the preface is put first; bit 7:
// the connection starts as HTTP/1.1 and may be upgraded with `Upgrade: h2c` + 101 — server side: the
// inbound HTTP/1.x connection (http_conn.cpp) that hands itself to H2Server; client side: the HTTP/1.x
// call tracker handing its upgraded call to H2Client as stream 1, as http_out.cpp does), then records
// [op][len hi][len lo][len bytes]: op % 3 = 0 the program read them, 1 it wrote them, 2 it closed the
// connection (len 0).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "protocols/http2/h2_client.h"
#include "protocols/http2/h2_conn.h"
#include "protocols/http2/h2_frames.h"
#include "protocols/http1/http_client.h"
#include "protocols/http1/http_conn.h"
#include "core/transaction.h"

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

class Sink final : public H2CallSink, public HttpClientSink {
 public:
  std::vector<std::string> log;
  int open = 0;
  // HTTP/1.x calls (upgrade mode, before the 101)
  void on_request(HttpCall&, const HttpRequestHead& h) override {
    ++open;
    log.push_back("req1 " + std::string(h.target) + (h.method == "GET" ? "" : " " + std::string(h.method)));
  }
  void on_first_byte(HttpCall&) override { log.push_back("fb1"); }
  void on_response(HttpCall& c, std::string_view error) override {
    if (--open < 0) fail("an HTTP/1.x call ended twice (or was never announced)");
    log.push_back("resp1 " + std::to_string(c.status) + " R=" + std::to_string(c.response_bytes) +
                  " W=" + std::to_string(c.request_bytes) + " " + std::string(error));
  }
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

// Set by run(): the HTTP/1.x tracker found the connection not to be HTTP before any upgrade. Deciding
// that on the first bytes of a request depends on how many of them are seen at once (a prefix of a
// method is given the benefit of the doubt: fuzz_http_outbound.cpp), so such runs are not compared.
bool g_not_http = false;

// The client side of an HTTP/1.1 connection that may be upgraded to HTTP/2 (the glue of http_out.cpp:
// on_received).
struct UpgradingClient {
  HttpClientTracker http1;
  H2Client h2;
  bool upgraded = false;
  void sent(const char* p, size_t n, Sink& s) {
    if (upgraded) return h2.on_sent(p, n, s);
    http1.on_sent(p, n, s);
    if (http1.opaque()) g_not_http = true;
  }
  void received(const char* p, size_t n, Sink& s) {
    if (upgraded) return h2.on_received(p, n, s);
    size_t used = http1.on_received(p, n, s);
    if (used > n) fail("the HTTP/1.x tracker used more bytes than it was given");
    HttpCall u;
    if (!http1.take_upgraded(&u)) {
      if (used != n) fail("bytes left over without an upgrade");
      if (http1.opaque()) g_not_http = true;
      return;
    }
    H2Call c;
    c.request_bytes = u.request_bytes;
    c.response_bytes = u.response_bytes;
    c.first_byte_seen = u.first_byte_seen;
    h2.reset_upgraded(c);
    upgraded = true;
    if (used < n) h2.on_received(p + used, n - used, s);
  }
  void end(Sink& s, const char* e) {
    if (upgraded) h2.on_end(s, e);
    else http1.on_end(s, e);
    HttpCall u;
    if (http1.take_upgraded(&u)) fail("an upgraded call was left behind");
  }
};

// Runs the records through one side; `piece` > 0 cuts every record into pieces of that size.
std::vector<std::string> run(bool server, bool upgrade, const std::vector<Record>& recs, size_t piece, uint64_t* read,
                             uint64_t* written) {
  std::vector<std::string> out;
  *read = *written = 0;
  auto feed = [&](auto&& fn, const std::string& b) {
    size_t step = piece ? piece : (b.empty() ? 1 : b.size());
    for (size_t i = 0; i < b.size(); i += step) fn(b.data() + i, std::min(step, b.size() - i));
  };
  if (upgrade && server) {
    g_done.clear();
    {
      auto c = std::make_unique<HttpConn>();
      c->reset("fuzz");
      for (const Record& r : recs) {
        if (r.op == 0) feed([&](const char* p, size_t n) { c->on_read(p, n); }, r.bytes), *read += r.bytes.size();
        else if (r.op == 1) feed([&](const char* p, size_t n) { c->on_write(p, n); }, r.bytes), *written += r.bytes.size();
        else c->on_close();
      }
      c->on_close();
      if (c->tx || (c->h2 && c->h2->open_streams() != 0)) fail("requests left open after close");
    }
    for (auto& t : g_done) {
      if (t->bytes_read > *read || t->bytes_written > *written) fail("a transaction counts more bytes than passed", describe(*t));
      out.push_back(describe(*t));
    }
    g_done.clear();
  } else if (upgrade) {
    g_not_http = false;
    Sink sink;
    auto c = std::make_unique<UpgradingClient>();
    for (const Record& r : recs) {
      if (r.op == 0) feed([&](const char* p, size_t n) { c->received(p, n, sink); }, r.bytes), *read += r.bytes.size();
      else if (r.op == 1) feed([&](const char* p, size_t n) { c->sent(p, n, sink); }, r.bytes), *written += r.bytes.size();
      else c->end(sink, "closed");
    }
    c->end(sink, "closed");
    if (sink.open != 0) fail("a call announced was never ended");
    if (c->h2.open_calls() != 0) fail("calls left open after the end");
    out = std::move(sink.log);
  } else if (server) {
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
  bool upgrade = data[0] & 0x80;
  std::vector<Record> recs;
  if ((data[0] & 2) && !upgrade) recs.push_back({server ? 0 : 1, std::string(h2::kPreface)});
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
  std::vector<std::string> whole = run(server, upgrade, recs, 0, &r1, &w1);
  bool not_http = g_not_http;
  size_t piece = 1 + data[0] / 4 % 13;
  std::vector<std::string> cut = run(server, upgrade, recs, piece, &r2, &w2);
  not_http |= g_not_http;
  if (whole != cut && !(upgrade && !server && not_http)) {
    std::string a, b;
    for (auto& s : whole) a += s + "\n";
    for (auto& s : cut) b += s + "\n";
    fail("pieces changed the result", a, b);
  }
  return 0;
}
