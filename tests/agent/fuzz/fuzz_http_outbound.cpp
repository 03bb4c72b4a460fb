// libFuzzer target: outbound HTTP/1.x tracking (agent/protocols/http1/http_client.cpp). It runs in the host on every
// byte a program writes to and reads from the sockets it connected: requests it writes, and responses
// from any server, hostile ones included. Promises checked:
//  - calls end in the order their requests were written (pipelining), each exactly once, and none is
//    answered before it was asked; at most kMaxOutstanding are open; on_end leaves none open;
//  - a call never counts more request or response bytes than passed;
//  - insert_point only points just after a complete HTTP/1.x request line: once the bytes before it are
//    sent, the tracker is inside that request's head;
//  - the URL of a call masks every query value (redact::append_query / http_call_url);
//  - the same bytes written and read in other pieces give the same calls, as long as neither run
//    found the connection not to be HTTP (deciding that on the first bytes of a request depends on how
//    many of them are seen at once: a prefix of a method is given the benefit of the doubt).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "protocols/http1/http_client.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a = {}, std::string_view b = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n  [%.*s]\n", what, int(a.size()), a.data(), int(b.size()),
          b.data());
  abort();
}

struct Pieces {
  std::vector<size_t> sizes;
  size_t next = 0;
  size_t take(size_t left) {
    size_t n = sizes.empty() ? 1 : sizes[next++ % sizes.size()];
    return n < left ? n : left;
  }
};

// Checks the call protocol and keeps a log of what the glue would record.
class Sink : public HttpClientSink {
 public:
  std::vector<std::string> log;
  std::deque<uint32_t> open;  // call numbers, oldest first
  uint32_t next_id = 1;
  uint64_t sent = 0, received = 0;

  void on_request(HttpCall& c, const HttpRequestHead& h) override {
    if (c.step.seq != 0) fail("on_request for a call already open");
    if (open.size() >= HttpClientTracker::kMaxOutstanding) fail("more calls open than kMaxOutstanding");
    c.step.seq = next_id++;
    open.push_back(c.step.seq);
    if (h.method.empty() || h.method.find(' ') != std::string_view::npos) fail("bad method", h.method);
    std::string url = http_call_url("http", h.host, h.target, "10.0.0.1:80");
    // The Host header is the program's to write (it may hold anything): only what follows it is checked.
    std::string_view host = h.host.empty() ? std::string_view("10.0.0.1:80") : h.host;
    std::string prefix = "http://" + std::string(host);
    check_masked(url.compare(0, prefix.size(), prefix) == 0 ? std::string_view(url).substr(prefix.size())
                                                           : std::string_view(url));
    if (url.find("://") == std::string::npos) fail("URL without a scheme", url);
    log.push_back("REQ " + std::string(h.method) + " " + url + " " + std::to_string(h.program_span_id));
  }
  void on_first_byte(HttpCall& c) override {
    if (open.empty() || c.step.seq != open.front()) fail("first byte of a call that is not the oldest open one");
    log.push_back("FB");
  }
  void on_response(HttpCall& c, std::string_view error) override {
    if (open.empty() || c.step.seq != open.front()) fail("response to a call that is not the oldest open one");
    open.pop_front();
    if (c.request_bytes > sent) fail("call counts more request bytes than were written");
    if (c.response_bytes > received) fail("call counts more response bytes than were read");
    log.push_back("RESP " + std::to_string(c.status) + " " + std::to_string(c.request_bytes) + " " +
                  std::to_string(c.response_bytes) + (error.empty() ? "" : " error"));
  }

  static void check_masked(std::string_view url) {
    size_t q = url.find('?');  // (a '?' can only start the query: a fragment was cut off)
    if (q == std::string_view::npos) return;
    std::string_view query = url.substr(q + 1);
    // every value is "?": after each '=' comes '?' and then '&' or the end
    for (size_t i = 0; i < query.size(); ++i)
      if (query[i] == '=' && (i + 1 >= query.size() || query[i + 1] != '?' ||
                              (i + 2 < query.size() && query[i + 2] != '&')))
        fail("a query value is not masked", url);
  }
};

struct Op {
  char kind;  // 's' sent, 'r' received, 'o' sent opaque (sendfile), 'e' end, 'i' insert_point check + sent
  std::string bytes;
  uint64_t n = 0;
  bool error = false;
};

struct Result {
  std::vector<std::string> log;
  bool opaque;
};

Result run(const std::vector<Op>& ops, Pieces* pieces) {
  HttpClientTracker t;
  Sink sink;
  for (const Op& op : ops) {
    if (op.kind == 'i') {
      size_t at = t.insert_point(op.bytes.data(), op.bytes.size());
      if (at != HttpClientTracker::kNoInsert) {
        if (at == 0 || at > op.bytes.size() || op.bytes[at - 1] != '\n') fail("insert point not after a line end", op.bytes);
        sink.sent += at;
        t.on_sent(op.bytes.data(), at, sink);
        if (t.opaque() || !t.request_in_progress()) fail("insert point not inside a request head", op.bytes);
        sink.sent += op.bytes.size() - at;
        t.on_sent(op.bytes.data() + at, op.bytes.size() - at, sink);
        continue;
      }
    }
    if (op.kind == 's' || op.kind == 'r' || op.kind == 'i') {
      size_t total = op.bytes.size();
      if (op.kind == 'r') sink.received += total;
      else sink.sent += total;
      for (size_t off = 0; off < total;) {
        size_t n = pieces ? pieces->take(total - off) : total;
        if (op.kind == 'r') t.on_received(op.bytes.data() + off, n, sink);
        else t.on_sent(op.bytes.data() + off, n, sink);
        off += n;
      }
    }
    if (op.kind == 'o') {
      sink.sent += op.n;
      t.on_sent_opaque(op.n, sink);
    }
    if (op.kind == 'e') {
      t.on_end(sink, op.error ? "read failed" : "");
      if (t.outstanding() != 0 || !sink.open.empty()) fail("calls left open after the end");
    }
    if (t.outstanding() != sink.open.size()) fail("outstanding() disagrees with the calls open");
  }
  t.on_end(sink);
  if (!sink.open.empty()) fail("calls left open after the end");
  return {sink.log, t.opaque()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Pieces pieces;
  for (int i = in.ConsumeIntegralInRange(0, 6); i > 0; --i) pieces.sizes.push_back(in.ConsumeIntegralInRange<size_t>(1, 40));
  std::vector<Op> ops;
  while (in.remaining_bytes() && ops.size() < 64) {
    Op op;
    op.kind = "ssrrrioe"[in.ConsumeIntegralInRange(0, 7)];
    if (op.kind == 's' || op.kind == 'r' || op.kind == 'i') op.bytes = in.ConsumeRandomLengthString(2048);
    if (op.kind == 'o') op.n = in.ConsumeIntegralInRange<uint64_t>(0, 4096);
    if (op.kind == 'e') op.error = in.ConsumeBool();
    ops.push_back(std::move(op));
  }
  Result whole = run(ops, nullptr);
  Result split = run(ops, &pieces);
  if (getenv("TXRAY_FUZZ_PRINT"))  // what a reproducer does: TXRAY_FUZZ_PRINT=1 agent_fuzz_http_outbound FILE
    for (auto& s : whole.log) fprintf(stderr, "%s\n", s.c_str());
  if (!whole.opaque && !split.opaque && whole.log != split.log) {
    std::string a, b;
    for (auto& s : whole.log) a += s + "\n";
    for (auto& s : split.log) b += s + "\n";
    fail("calls depend on how the bytes were cut", a, b);
  }
  // The query masking on its own.
  std::string masked;
  redact::append_query(redact::Policy{}, std::string_view(data ? reinterpret_cast<const char*>(data) : "", size), masked);
  Sink::check_masked("http://h/p?" + masked);
  return 0;
}
