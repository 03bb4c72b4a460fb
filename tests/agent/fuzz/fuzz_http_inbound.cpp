// libFuzzer target: the inbound HTTP/1.x side (agent/protocols/http1/http_parse.cpp and the connection tracker
// http_conn.cpp, with the agent's real transaction core). It runs in the host on every byte a server
// reads from and writes to its accepted connections. Promises checked:
//  - find_head_end resumed after each piece finds the same end as one scan of the whole;
//  - looks_like_request decides for good: "HTTP" on a prefix stays HTTP, "not HTTP" on a prefix
//    (within kMaxHead) stays not HTTP;
//  - heads it accepts have a method without spaces, a status of three digits, lengths >= -1;
//  - BodyFramer and ResponseTracker consume exactly the same bytes and reach the same state whether a
//    body or response comes in one piece or in pieces of any size, and never claim more than given;
//  - HttpConn: a connection's requests and responses, read and written in any pieces, give the same
//    transactions (name, status, error, bytes read and written, attributes) as whole reads and writes,
//    and a transaction never counts more bytes than passed.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "protocols/http1/http_conn.h"
#include "protocols/http1/http_parse.h"
#include "core/transaction.h"

using namespace txray;
using namespace txray::http;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a = {}, std::string_view b = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n  [%.*s]\n", what, int(a.size()), a.data(), int(b.size()),
          b.data());
  abort();
}

// Piece sizes chosen by the fuzzer, used in turn (1 when none were given).
struct Pieces {
  std::vector<size_t> sizes;
  size_t next = 0;
  size_t take(size_t left) {
    size_t n = sizes.empty() ? 1 : sizes[next++ % sizes.size()];
    return n < left ? n : left;
  }
};

std::vector<std::unique_ptr<Transaction>> g_done;
void collect(Transaction* t) { g_done.emplace_back(t); }

std::string describe(const Transaction& t) {
  std::string s = t.name + "|" + std::to_string(t.status) + "|" + t.error + "|" + std::to_string(t.bytes_read) +
                  "|" + std::to_string(t.bytes_written) + "|" + std::to_string(t.parent_span_id);
  for (const Attr& a : t.attrs) s += "|" + a.key + "=" + a.value;
  return s;
}

void check_heads(std::string_view buf, Pieces& pieces) {
  size_t whole = find_head_end(buf, 0);
  if (whole) {
    if (whole > buf.size() || buf[whole - 1] != '\n' ||
        !(buf[whole - 2] == '\n' || (whole >= 3 && buf.substr(whole - 3, 3) == "\n\r\n")))
      fail("find_head_end points at no blank line", buf);
  }
  int looks_whole = looks_like_request(buf);
  size_t scanned = 0, found = 0;
  for (size_t len = 0; len < buf.size() && !found;) {
    len += pieces.take(buf.size() - len);
    std::string_view prefix = buf.substr(0, len);
    found = find_head_end(prefix, scanned);
    scanned = len;
    if (found && found != whole) fail("find_head_end resumed finds another end", buf);
    int looks = looks_like_request(prefix);
    if (looks == 1 && looks_whole != 1) fail("looks_like_request changed its mind (yes)", buf);
    if (looks == -1 && prefix.size() <= kMaxHead && looks_whole != -1) fail("looks_like_request changed its mind (no)", buf);
  }
  if (whole && !found) fail("find_head_end resumed missed the end", buf);

  std::string_view head = buf.substr(0, whole ? whole : buf.size());
  RequestHead rq;
  if (parse_request_head(head, &rq)) {
    if (rq.method.empty() || rq.method.find(' ') != std::string::npos) fail("request method empty or spaced", head);
    if (rq.content_length < -1) fail("negative content length", head);
    if (rq.user_agent.size() > 512 || rq.traceparent.size() > 128) fail("header values not cut", head);
  }
  ResponseHead rs;
  if (parse_response_head(head, &rs)) {
    if (rs.status < 0 || rs.status > 999 || rs.content_length < -1) fail("response head out of range", head);
  }
}

void check_framer(BodyFramer::Mode mode, uint64_t length, std::string_view body, Pieces& pieces) {
  BodyFramer a, b;
  a.reset(mode, length);
  b.reset(mode, length);
  size_t used_a = a.feed(body.data(), body.size());
  size_t used_b = 0;
  for (size_t off = 0; off < body.size() && !b.done();) {
    size_t n = pieces.take(body.size() - off);
    size_t u = b.feed(body.data() + off, n);
    if (u > n) fail("framer took more than given", body);
    used_b += u;
    if (u < n && !b.done()) fail("framer stopped short without being done", body);
    off += n;
  }
  if (used_a > body.size()) fail("framer took more than given", body);
  if (used_a != used_b || a.done() != b.done() || a.mode() != b.mode()) fail("framer depends on the pieces", body);
}

void check_response(bool head_request, std::string_view resp, Pieces& pieces) {
  ResponseTracker a, b;
  a.reset(head_request);
  b.reset(head_request);
  size_t used_a = a.feed(resp.data(), resp.size());
  size_t used_b = 0;
  for (size_t off = 0; off < resp.size() && !b.done();) {
    size_t n = pieces.take(resp.size() - off);
    size_t u = b.feed(resp.data() + off, n);
    if (u > n) fail("response tracker took more than given", resp);
    used_b += u;
    off += n;
  }
  if (used_a > resp.size()) fail("response tracker took more than given", resp);
  if (used_a != used_b || a.done() != b.done() || a.status() != b.status() || a.gave_up() != b.gave_up() ||
      a.head_done() != b.head_done())
    fail("response tracker depends on the pieces", resp);
}

// One connection's life: reads and writes of the fuzzer's bytes, whole or in pieces.
struct Op {
  char kind;  // 'r' read, 'w' write, 'o' opaque write (sendfile), 'c' close
  std::string bytes;
  uint64_t n = 0;
};

std::vector<std::string> run_conn(const std::vector<Op>& ops, Pieces* pieces) {
  g_done.clear();
  HttpConn conn;
  conn.reset("10.0.0.7:5555", 7);
  uint64_t read = 0, written = 0;
  for (const Op& op : ops) {
    size_t total = op.bytes.size();
    for (size_t off = 0; off < total || (total == 0 && off == 0);) {
      size_t n = pieces ? pieces->take(total - off) : total;
      if (op.kind == 'r') conn.on_read(op.bytes.data() + off, n);
      if (op.kind == 'w') conn.on_write(op.bytes.data() + off, n);
      off += n;
      if (n == 0) break;
    }
    if (op.kind == 'r') read += total;
    if (op.kind == 'w') written += total;
    if (op.kind == 'o') {
      conn.on_write_opaque(op.n);
      written += op.n;
    }
    if (op.kind == 'c') conn.on_close();
    if (conn.tx && (conn.tx->bytes_read > read || conn.tx->bytes_written > written))
      fail("transaction counts more bytes than passed", describe(*conn.tx));
  }
  conn.on_close();
  std::vector<std::string> out;
  for (auto& t : g_done) {
    if (t->bytes_read > read || t->bytes_written > written) fail("transaction counts more bytes than passed", describe(*t));
    out.push_back(describe(*t));
  }
  g_done.clear();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tx::set_sink(collect);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Pieces pieces;
  for (int i = in.ConsumeIntegralInRange(0, 6); i > 0; --i) pieces.sizes.push_back(in.ConsumeIntegralInRange<size_t>(1, 40));
  int what = in.ConsumeIntegralInRange(0, 3);

  if (what == 3) {
    // A connection: the script is a list of operations with their bytes.
    std::vector<Op> ops;
    while (in.remaining_bytes() && ops.size() < 64) {
      Op op;
      op.kind = "rrwwoc"[in.ConsumeIntegralInRange(0, 5)];
      if (op.kind == 'r' || op.kind == 'w') op.bytes = in.ConsumeRandomLengthString(2048);
      if (op.kind == 'o') op.n = in.ConsumeIntegralInRange<uint64_t>(0, 4096);
      ops.push_back(std::move(op));
    }
    std::vector<std::string> whole = run_conn(ops, nullptr);
    pieces.next = 0;
    std::vector<std::string> split = run_conn(ops, &pieces);
    if (getenv("TXRAY_FUZZ_PRINT"))  // what a reproducer does: TXRAY_FUZZ_PRINT=1 agent_fuzz_http_inbound FILE
      for (auto& s : whole) fprintf(stderr, "tx %s\n", s.c_str());
    if (whole != split) {
      std::string a, b;
      for (auto& s : whole) a += s + "\n";
      for (auto& s : split) b += s + "\n";
      fail("HttpConn depends on how reads and writes are cut", a, b);
    }
    return 0;
  }

  bool head_request = in.ConsumeBool();
  auto mode = BodyFramer::Mode(in.ConsumeIntegralInRange(0, 3));
  uint64_t length = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 300) : in.ConsumeIntegral<uint64_t>();
  std::string rest = in.ConsumeRemainingBytesAsString();
  std::vector<char> buf(rest.begin(), rest.end());  // exact size: ASan sees any read past the end
  std::string_view bytes(buf.data(), buf.size());
  if (what == 0) check_heads(bytes, pieces);
  if (what == 1) check_framer(mode, length, bytes, pieces);
  if (what == 2) check_response(head_request, bytes, pieces);
  return 0;
}
