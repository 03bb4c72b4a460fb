// uwsgi, client side: call rows of the calling transaction, and the vars of trace context the client
// puts into a packet — checked against the real inbound tracker (what uWSGI's agent makes of the bytes)
// and, byte for byte, against the program's own bytes, under kernels that take any number of bytes per
// write; the 16-bit datasize; hostile answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "core/counters.h"
#include "core/fd_table.h"
#include "protocols/http1/http_conn.h"
#include "protocols/uwsgi/uwsgi_client.h"
#include "protocols/uwsgi/uwsgi_packet.h"
#include "support/test_support.h"
#include "uwsgi_bytes.h"

using namespace txray;
using namespace txray::test::uwsgi_bytes;
using txray::test::Collected;
using txray::test::FakeClock;

namespace {

std::string gathered(const iovec* v, int k) {
  std::string s;
  for (int i = 0; i < k; ++i) s.append(static_cast<const char*>(v[i].iov_base), v[i].iov_len);
  return s;
}

// The write hook's loop (http_out.cpp: wire_write_through) with a kernel that takes at most `cap` bytes
// per call. Returns the wire bytes; the program's own counts are checked to add up to its bytes.
std::string write_all(WireClient& c, const std::string& prog, size_t cap, std::mt19937* rng = nullptr) {
  std::string wire;
  size_t off = 0;
  while (off < prog.size()) {
    iovec iov[2];
    int cnt = 1;
    size_t rest = prog.size() - off;
    // The header in the first iovec (nginx writes header and vars from one buffer): one split over
    // iovecs goes unchanged (HeaderSplitOverIovecsIsWrittenAsItIs).
    size_t lo = off == 0 ? 4 : 1;
    size_t cut = rng && rest > lo ? lo + (*rng)() % (rest - lo) : rest;
    iov[0] = {const_cast<char*>(prog.data() + off), cut};
    if (cut < rest) iov[1] = {const_cast<char*>(prog.data() + off + cut), rest - cut}, cnt = 2;
    iovec out[2 + WireClient::kWriteExtra];
    int k = c.plan_write(iov, cnt, out);
    size_t mine;
    if (k == 0) {
      mine = std::min(cap, rest);
      wire.append(prog, off, mine);
    } else {
      for (;;) {
        std::string lay = gathered(out, k);
        size_t r = std::min(cap, lay.size());
        wire.append(lay, 0, r);
        mine = c.commit_write(r);
        if (mine > 0 || r == 0) break;
        k = c.plan_write(iov, cnt, out);
        if (k == 0) std::copy(iov, iov + cnt, out), k = cnt;
      }
    }
    EXPECT_LE(mine, rest);
    c.on_sent(prog.data() + off, mine);
    off += mine;
  }
  return wire;
}

// The wire with the client's vars taken out again, its datasize back to the program's: the program's
// bytes when the client changed nothing else. *added: the vars it inserted.
std::string without_inserted(const std::string& wire, const std::string& prog, std::string* added = nullptr) {
  size_t grown = wire.size() - prog.size();
  std::string out = wire.substr(0, 4) + wire.substr(4 + grown);
  size_t datasize = size_t(uint8_t(out[1]) | uint8_t(out[2]) << 8) - grown;
  out[1] = char(datasize & 0xff);
  out[2] = char(datasize >> 8);
  if (added) *added = wire.substr(4, grown);
  return out;
}

class UwsgiClientTest : public ::testing::Test {
 public:  // the hostile cases' lambdas drive the fixture
  void SetUp() override {
    FakeClock::install();
    Collected::install();
    counters().reset();
    uwsgi::set_propagate_for_test(1);
    front = tx::begin("GET /front", "http");
    tx::make_current(front);
    env.slot = &slot;
    env.peer = "127.0.0.1:3031";
    env.owner = &owner;
    client.reset(uwsgi::make_client(env));
  }
  void TearDown() override {
    client.reset();
    FakeClock::uninstall();
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
    uwsgi::set_propagate_for_test(-1);
  }
  const Transaction& end_front() {
    tx::end(front, 200, "");
    return *Collected::txs.back();
  }
  static const Step* call_row(const Transaction& t, size_t nth = 0) {
    for (const Step& s : t.steps)
      if (s.kind == StepKind::HTTP_CALL && nth-- == 0) return &s;
    return nullptr;
  }
  static std::string row_attr(const Step& s, std::string_view key) {
    for (auto& a : s.attrs)
      if (a.key == key) return a.value;
    return "<none>";
  }
  // What the application's agent makes of the wire: its transactions (ended by a canned answer). On a
  // thread of its own, as in the application's process: this thread's request stays the front's.
  std::vector<std::unique_ptr<Transaction>> serve(const std::string& wire) {
    std::vector<std::unique_ptr<Transaction>> mine;
    size_t before = Collected::txs.size();
    std::thread([&] {
      HttpConn srv;
      srv.reset("unix", 9);
      srv.on_read(wire.data(), wire.size());
      std::string a = answer(200, "");
      srv.on_write(a.data(), a.size());
    }).join();
    for (size_t i = before; i < Collected::txs.size(); ++i) mine.push_back(std::move(Collected::txs[i]));
    Collected::txs.resize(before);
    return mine;
  }
  void receive(const std::string& s) { client->on_received(s.data(), s.size()); }
  FdSlot slot;
  ReqRef owner;
  WireEnv env;
  std::unique_ptr<WireClient> client;
  Transaction* front = nullptr;
};

const std::string kProgram = request("GET", "/app/items?user=alice");

}  // namespace

TEST(UwsgiRequestRecognition, NginxsFirstWriteOnly) {
  EXPECT_TRUE(uwsgi::looks_like_request(kProgram.data(), 24));
  EXPECT_TRUE(uwsgi::looks_like_request(kProgram.data(), 7));
  EXPECT_FALSE(uwsgi::looks_like_request(kProgram.data(), 6));
  EXPECT_FALSE(uwsgi::looks_like_request("GET / HTTP/1.1\r\nHost: a\r\n", 24));
  std::string fcgi = std::string("\x01\x01\x00\x01\x00\x08\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00", 16);
  EXPECT_FALSE(uwsgi::looks_like_request(fcgi.data(), fcgi.size()));
  std::string pg = std::string("\0\0\0\x4f\0\x03\0\0user\0", 13);
  EXPECT_FALSE(uwsgi::looks_like_request(pg.data(), pg.size()));
  std::string tls = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
  EXPECT_FALSE(uwsgi::looks_like_request(tls.data(), tls.size()));
  std::string bad_key = kProgram;
  bad_key[8] = 'q';  // "QUqRY_STRING": a key of CGI-variable characters only
  EXPECT_FALSE(uwsgi::looks_like_request(bad_key.data(), 24));
  std::string long_value = packet({{"QUERY_STRING", "x"}, {"REQUEST_METHOD", "GET"}});
  long_value[18] = char(0xff);  // QUERY_STRING's value length past the datasize
  EXPECT_FALSE(uwsgi::looks_like_request(long_value.data(), 24));
}

TEST_F(UwsgiClientTest, CallRowLinksToTheApplicationsTransaction) {
  std::string wire = write_all(*client, kProgram, 1 << 20);
  ASSERT_GT(wire.size(), kProgram.size());
  std::string added;
  EXPECT_EQ(without_inserted(wire, kProgram, &added), kProgram) << "only the header's datasize and the vars";
  EXPECT_EQ(added.substr(0, 2 + 16), std::string("\x10\x00HTTP_TRACEPARENT", 18));
  EXPECT_EQ(size_t(uint8_t(wire[1]) | uint8_t(wire[2]) << 8), wire.size() - 4) << "the datasize holds every var";

  auto app = serve(wire);
  ASSERT_EQ(app.size(), 1u);
  FakeClock::advance(7000);
  std::string a = answer(404, "nope");
  receive(a);
  const Transaction& f = end_front();
  const Step* row = call_row(f);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(std::string(row->text.view()), "uwsgi://127.0.0.1:3031/app/items?user=?");
  EXPECT_EQ(row_attr(*row, "protocol"), "uwsgi");
  EXPECT_EQ(row_attr(*row, "method"), "GET");
  EXPECT_EQ(row->status, 404);
  EXPECT_EQ(row->elapsed_ns, 7000u);
  EXPECT_EQ(row->bytes_read, a.size());
  EXPECT_EQ(row->bytes_written, 0u);
  EXPECT_FALSE(row->open);
  EXPECT_EQ(app[0]->name, "GET /app/items");
  EXPECT_EQ(app[0]->parent_span_id, row->id) << "the callee's parent is the call row";
  EXPECT_EQ(0, std::memcmp(app[0]->trace_id, f.trace_id, 16));
  EXPECT_EQ(f.totals.call_count, 1u);
}

TEST_F(UwsgiClientTest, AnyKernelSplitGivesTheSameWireAndCounts) {
  std::mt19937 rng(11);
  std::string prog = request("POST", "/upload", std::string(300, 'u'));
  for (size_t cap = 1; cap <= 140; ++cap) {
    client.reset(uwsgi::make_client(env));
    std::string wire = write_all(*client, prog, cap, cap % 2 ? &rng : nullptr);
    ASSERT_EQ(without_inserted(wire, prog), prog) << cap;
    auto app = serve(wire);
    ASSERT_EQ(app.size(), 1u) << cap;
    EXPECT_EQ(app[0]->bytes_read, 300u) << cap;
    EXPECT_NE(app[0]->parent_span_id, 0u) << cap;
    EXPECT_EQ(0, std::memcmp(app[0]->trace_id, front->trace_id, 16));
    receive(answer(200, "ok"));
  }
  const Transaction& f = end_front();
  EXPECT_EQ(f.totals.call_count, 140u);
  for (const Step& s : f.steps) {
    if (s.kind == StepKind::HTTP_CALL) {
      EXPECT_EQ(s.bytes_written, 300u);
    }
  }
}

TEST_F(UwsgiClientTest, ResponseUntilCloseEndsAtTheConnectionsEndWithoutError) {
  write_all(*client, kProgram, 1 << 20);
  std::string a = answer(200, "streamed", false);
  receive(a);
  receive("more");
  FakeClock::advance(3000);
  client->on_end("connection closed by the server before the reply ended");
  const Transaction& f = end_front();
  const Step* row = call_row(f);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->status, 200);
  EXPECT_TRUE(row->error.empty()) << row->error;
  EXPECT_EQ(row->bytes_read, a.size() + 4);
  EXPECT_EQ(row->elapsed_ns, 3000u);
}

TEST_F(UwsgiClientTest, ConnectionEndBeforeTheAnswerIsAnError) {
  write_all(*client, kProgram, 1 << 20);
  receive("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort");
  client->on_end("connection closed by the server before the reply ended");
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->error, "connection closed by the server before the reply ended");
  EXPECT_FALSE(call_row(f)->open);
}

TEST_F(UwsgiClientTest, ServerErrorIsTheRowsError) {
  write_all(*client, kProgram, 1 << 20);
  receive(answer(502, "bad gateway"));
  const Transaction& f = end_front();
  EXPECT_EQ(call_row(f)->status, 502);
  EXPECT_EQ(call_row(f)->error, "HTTP 502");
}

TEST_F(UwsgiClientTest, PacketsOneAfterAnotherEachGetTheirOwnSpan) {
  std::vector<uint64_t> parents;
  for (int i = 0; i < 3; ++i) {
    std::string prog = request("PUT", "/r" + std::to_string(i), "xy");
    std::string wire = write_all(*client, prog, 1 << 20);
    auto app = serve(wire);
    ASSERT_EQ(app.size(), 1u);
    parents.push_back(app[0]->parent_span_id);
    receive(answer(200, "ok"));
  }
  const Transaction& f = end_front();
  for (int i = 0; i < 3; ++i) {
    const Step* row = call_row(f, size_t(i));
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->id, parents[size_t(i)]);
    EXPECT_EQ(row->bytes_written, 2u);
    EXPECT_EQ(std::string(row->text.view()), "uwsgi://127.0.0.1:3031/r" + std::to_string(i));
  }
  EXPECT_NE(parents[0], parents[1]);
  EXPECT_EQ(counters().streams_unparsed.load(), 0u);
}

TEST_F(UwsgiClientTest, AnswerBeforeTheBodyWentOutThenTheRestOfTheBody) {
  std::string prog = request("POST", "/big", std::string(1000, 'b'));
  size_t head = prog.size() - 1000;
  std::string first = prog.substr(0, head + 10);
  write_all(*client, first, 1 << 20);
  receive(answer(413, "too large"));
  client->on_sent(prog.data() + head + 10, 990);
  std::string next = request("GET", "/after");
  write_all(*client, next, 1 << 20);
  receive(answer(200, ""));
  EXPECT_FALSE(client->stopped());
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f, 1), nullptr);
  EXPECT_EQ(call_row(f, 0)->status, 413);
  EXPECT_EQ(call_row(f, 1)->status, 200);
  EXPECT_EQ(std::string(call_row(f, 1)->text.view()), "uwsgi://127.0.0.1:3031/after");
}

TEST_F(UwsgiClientTest, ProgramsOwnTraceparentComesAfterTheInsertedOne) {
  std::string prog = request("GET", "/x", "", "00-11111111111111111111111111111111-2222222222222222-01");
  std::string wire = write_all(*client, prog, 1 << 20);
  auto app = serve(wire);
  ASSERT_EQ(app.size(), 1u);
  receive(answer(200, ""));
  const Transaction& f = end_front();
  EXPECT_EQ(app[0]->parent_span_id, call_row(f)->id);
}

TEST_F(UwsgiClientTest, TracestateAndBaggageGoToo) {
  front->tracestate = "vendor=abc";
  std::string wire = write_all(*client, kProgram, 1 << 20);
  std::string added;
  ASSERT_EQ(without_inserted(wire, kProgram, &added), kProgram);
  EXPECT_NE(added.find("HTTP_TRACESTATE"), std::string::npos);
  auto app = serve(wire);
  ASSERT_EQ(app.size(), 1u);
  EXPECT_EQ(app[0]->tracestate, "vendor=abc");
}

// The datasize is 16 bits: vars that fill it leave no room for the context, and the packet goes as the
// program wrote it (counted, and the row says so); with a little room, the traceparent alone.
TEST_F(UwsgiClientTest, DatasizeLimitIsNeverPassed) {
  front->tracestate = std::string(200, 't') + "=v";
  uint64_t before = uwsgi::contexts_not_sent();
  for (size_t room : {size_t(0), size_t(10), size_t(74), size_t(75), size_t(100), size_t(300)}) {
    Vars v = nginx_vars("GET", "/full");
    size_t used = vars_block(v).size();
    v.push_back({"HTTP_X_PAD", std::string(0xffff - room - used - 4 - 10, 'p')});
    std::string prog = packet(v);
    ASSERT_EQ(size_t(uint8_t(prog[1]) | uint8_t(prog[2]) << 8), 0xffff - room);
    client.reset(uwsgi::make_client(env));
    std::string wire = write_all(*client, prog, 4096);
    size_t datasize = size_t(uint8_t(wire[1]) | uint8_t(wire[2]) << 8);
    EXPECT_EQ(datasize, wire.size() - 4) << room;
    std::string added;
    EXPECT_EQ(without_inserted(wire, prog, &added), prog) << room;
    bool fits = room >= 75;  // 2 + 16 + 2 + 55: HTTP_TRACEPARENT's var
    EXPECT_EQ(wire.size() > prog.size(), fits) << room;
    EXPECT_EQ(added.find("HTTP_TRACESTATE") != std::string::npos, room >= 75 + 4 + 15 + 202) << room;
    receive(answer(200, ""));
  }
  EXPECT_EQ(uwsgi::contexts_not_sent() - before, 3u);
  const Transaction& f = end_front();
  EXPECT_EQ(row_attr(*call_row(f, 0), "propagation"), "skipped: the packet's datasize would pass 65535");
  EXPECT_EQ(row_attr(*call_row(f, 4), "propagation"), "<none>");
}

TEST_F(UwsgiClientTest, NoPropagationNoChangeButStillARow) {
  uwsgi::set_propagate_for_test(0);
  iovec iov{const_cast<char*>(kProgram.data()), kProgram.size()};
  iovec out[1 + WireClient::kWriteExtra];
  EXPECT_EQ(client->plan_write(&iov, 1, out), 0);
  client->on_sent(kProgram.data(), kProgram.size());
  receive(answer(200, "ok"));
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->status, 200);
}

TEST_F(UwsgiClientTest, HeaderSplitOverIovecsIsWrittenAsItIs) {
  // a header across two iovecs cannot be replaced in one: the program's bytes go unchanged
  iovec iov[2] = {{const_cast<char*>(kProgram.data()), 2}, {const_cast<char*>(kProgram.data() + 2), kProgram.size() - 2}};
  iovec out[2 + WireClient::kWriteExtra];
  int k = client->plan_write(iov, 2, out);
  if (k) {
    EXPECT_EQ(gathered(out, k), kProgram);
    EXPECT_EQ(client->commit_write(kProgram.size()), kProgram.size());
  }
  client->on_sent(kProgram.data(), kProgram.size());
  receive(answer(200, ""));
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->status, 200);
}

TEST_F(UwsgiClientTest, HostileAnswersStopTheClientOnceAndNothingIsInsertedAfter) {
  struct Case {
    const char* what;
    std::function<void(UwsgiClientTest&)> run;
  };
  std::vector<Case> cases = {
      {"an answer before any request", [](UwsgiClientTest& t) { t.receive(answer(200, "")); }},
      {"bytes after the answer",
       [](UwsgiClientTest& t) {
         write_all(*t.client, kProgram, 1 << 20);
         t.receive(answer(200, "ok") + "HTTP/1.1 200 OK\r\n");
       }},
      {"a second request before the answer",
       [](UwsgiClientTest& t) {
         write_all(*t.client, kProgram, 1 << 20);
         t.client->on_sent(kProgram.data(), kProgram.size());
       }},
      {"a packet of another modifier",
       [](UwsgiClientTest& t) {
         std::string p = packet(nginx_vars("GET", "/"), 7);
         t.client->on_sent(p.data(), p.size());
       }},
      {"vars past the datasize",
       [](UwsgiClientTest& t) {
         std::string p = kProgram;
         p[1] = char(uint8_t(p[1]) - 1);
         t.client->on_sent(p.data(), p.size());
       }},
  };
  for (auto& c : cases) {
    counters().reset();
    client.reset(uwsgi::make_client(env));
    c.run(*this);
    EXPECT_TRUE(client->stopped()) << c.what;
    EXPECT_EQ(counters().streams_unparsed.load(), 1u) << c.what;
    receive("more garbage");
    client->on_sent("x", 1);
    EXPECT_EQ(counters().streams_unparsed.load(), 1u) << c.what;
    iovec iov{const_cast<char*>(kProgram.data()), kProgram.size()};
    iovec out[1 + WireClient::kWriteExtra];
    EXPECT_EQ(client->plan_write(&iov, 1, out), 0) << c.what;
    client->on_end({});
  }
  const Transaction& f = end_front();
  for (const Step& s : f.steps) EXPECT_FALSE(s.open);
}

// The kernel took part of the inserted vars and then the server sent garbage: the client's own bytes
// still all go out before it stops, so the packet on the wire stays whole.
TEST_F(UwsgiClientTest, GarbageWhileInsertedBytesArePendingStopsAfterThem) {
  iovec iov{const_cast<char*>(kProgram.data()), kProgram.size()};
  iovec out[1 + WireClient::kWriteExtra];
  int k = client->plan_write(&iov, 1, out);
  ASSERT_GT(k, 0);
  std::string wire = gathered(out, k).substr(0, 10);
  size_t mine = client->commit_write(10);
  EXPECT_EQ(mine, 4u) << "the header counts as written once its replacement started";
  client->on_sent(kProgram.data(), mine);
  receive("garbage");
  EXPECT_FALSE(client->stopped());
  size_t off = mine;
  while (off < kProgram.size()) {
    iovec rest{const_cast<char*>(kProgram.data() + off), kProgram.size() - off};
    k = client->plan_write(&rest, 1, out);
    std::string lay = k ? gathered(out, k) : kProgram.substr(off);
    wire += lay;
    size_t m = k ? client->commit_write(lay.size()) : lay.size();
    client->on_sent(kProgram.data() + off, m);
    off += m;
  }
  EXPECT_TRUE(client->stopped());
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  EXPECT_EQ(without_inserted(wire, kProgram), kProgram);
}

// uWSGI answers a HEAD request with its body all the same (captures/nginx-head.bin): the row ends at
// the head, and the body is not taken for a second answer.
TEST_F(UwsgiClientTest, BodyOfAHeadAnswerIsNotASecondAnswer) {
  write_all(*client, request("HEAD", "/head"), 1 << 20);
  receive("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello /head");
  client->on_end("connection closed by the server before the reply ended");
  EXPECT_FALSE(client->stopped());
  EXPECT_EQ(counters().streams_unparsed.load(), 0u);
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->status, 200);
  EXPECT_TRUE(call_row(f)->error.empty());
  EXPECT_EQ(row_attr(*call_row(f), "method"), "HEAD");
}

// A header written alone: nothing of the packet follows it in the write, so nothing is inserted (the
// vars the kernel might leave pending could otherwise outlive a program that writes no more).
TEST_F(UwsgiClientTest, HeaderWrittenAloneGoesAsItIs) {
  iovec iov{const_cast<char*>(kProgram.data()), 4};
  iovec out[1 + WireClient::kWriteExtra];
  EXPECT_EQ(client->plan_write(&iov, 1, out), 0);
  client->on_sent(kProgram.data(), 4);
  std::string rest = kProgram.substr(4);
  EXPECT_EQ(write_all(*client, rest, 1 << 20), rest);
  receive(answer(200, ""));
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->status, 200);
  EXPECT_EQ(row_attr(*call_row(f), "propagation"), "<none>");
}

// Vars the write does not hold whole, or keys that are no CGI variables: the bytes are not surely a
// uwsgi packet's header, so they go unchanged (a row all the same when the packet parses).
TEST_F(UwsgiClientTest, OnlyAWriteWithWholeCgiVarsGetsTheContext) {
  iovec out[1 + WireClient::kWriteExtra];
  std::string part = kProgram.substr(0, kProgram.size() - 3);
  iovec iov{part.data(), part.size()};
  EXPECT_EQ(client->plan_write(&iov, 1, out), 0);
  client->on_sent(part.data(), part.size());
  client->on_sent(kProgram.data() + part.size(), 3);
  receive(answer(200, ""));
  std::string odd = packet({{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/odd"}, {"lower key", "v"}});
  iovec iov2{odd.data(), odd.size()};
  EXPECT_EQ(client->plan_write(&iov2, 1, out), 0);
  client->on_sent(odd.data(), odd.size());
  receive(answer(200, ""));
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f, 1), nullptr);
  EXPECT_EQ(std::string(call_row(f, 0)->text.view()), "uwsgi://127.0.0.1:3031/app/items?user=?");
  EXPECT_EQ(std::string(call_row(f, 1)->text.view()), "uwsgi://127.0.0.1:3031/odd");
}

// nginx with `sendfile on` sends a request body it buffered in a file by sendfile: counted as body, the
// stream followed on; bytes the client cannot place (not body) are refused.
TEST_F(UwsgiClientTest, BodySentByFileIsCountedAndTheStreamFollowedOn) {
  std::string prog = request("POST", "/upload", std::string(200000, 'f'));
  std::string head = prog.substr(0, prog.size() - 200000);
  EXPECT_FALSE(client->on_sent_opaque(10)) << "nothing of a packet yet";
  write_all(*client, head, 1 << 20);
  EXPECT_TRUE(client->on_sent_opaque(150000));
  EXPECT_FALSE(client->on_sent_opaque(50001)) << "more than the body";
  EXPECT_TRUE(client->on_sent_opaque(50000));
  receive(answer(201, "stored"));
  EXPECT_FALSE(client->stopped());
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->status, 201);
  EXPECT_EQ(call_row(f)->bytes_written, 200000u);
  EXPECT_TRUE(call_row(f)->error.empty());
}
