// Inbound HTTP tracking over one connection: requests split over reads, responses split over writes,
// keep-alive, pipelining, bodies, closes in the middle of a response.
#include "protocols/http1/http_conn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/test_support.h"

using namespace txray;
using txray::test::Collected;
using txray::test::FakeClock;

namespace {

class HttpConnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeClock::install();
    Collected::install();
    conn.reset("10.0.0.7:5555");
  }
  void TearDown() override {
    FakeClock::uninstall();
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
  }
  void read(const std::string& s, size_t step = 0) {
    if (!step) step = s.size();
    for (size_t i = 0; i < s.size(); i += step) conn.on_read(s.data() + i, std::min(step, s.size() - i));
  }
  void write(const std::string& s, size_t step = 0) {
    if (!step) step = s.size();
    for (size_t i = 0; i < s.size(); i += step) conn.on_write(s.data() + i, std::min(step, s.size() - i));
  }
  HttpConn conn;
};

const std::string kReq = "GET /a/b?q=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: ua\r\n\r\n";
const std::string kResp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

}  // namespace

TEST_F(HttpConnTest, RequestSplitOverManyReadsBeginsOneTransaction) {
  for (size_t i = 0; i + 1 < kReq.size(); ++i) {
    conn.on_read(&kReq[i], 1);
    ASSERT_EQ(conn.tx, nullptr) << "began before the head was complete, at byte " << i;
  }
  conn.on_read(&kReq.back(), 1);
  ASSERT_NE(conn.tx, nullptr);
  EXPECT_EQ(tx::thread_current(), conn.tx);
  EXPECT_EQ(conn.tx->name, "GET /a/b");
  EXPECT_EQ(conn.tx->client_addr, "10.0.0.7:5555");
  bool has_query = false;
  for (auto& a : conn.tx->attrs) has_query |= a.key == "query" && a.value == "q=?";  // values masked by default
  EXPECT_TRUE(has_query);
}

TEST_F(HttpConnTest, ResponseSplitOverWritesEndsTheTransaction) {
  read(kReq);
  FakeClock::advance(3000, 1000);
  write(kResp, 3);
  ASSERT_EQ(Collected::txs.size(), 1u);
  auto& t = *Collected::txs[0];
  EXPECT_EQ(t.status, 200);
  EXPECT_TRUE(t.error.empty());
  EXPECT_EQ(t.bytes_read, kReq.size());
  EXPECT_EQ(t.bytes_written, kResp.size());
  EXPECT_EQ(t.elapsed_ns, 3000u);
  EXPECT_EQ(t.cpu_ns, 1000u);
  EXPECT_EQ(tx::thread_current(), nullptr);
}

TEST_F(HttpConnTest, KeepAliveGivesOneTransactionPerRequest) {
  for (int i = 0; i < 3; ++i) {
    read(kReq);
    write(kResp);
  }
  ASSERT_EQ(Collected::txs.size(), 3u);
  EXPECT_NE(Collected::txs[0]->txid, Collected::txs[1]->txid);
}

TEST_F(HttpConnTest, PipelinedRequestWaitsForThePreviousResponse) {
  std::string second = "HEAD /second HTTP/1.1\r\nHost: h\r\n\r\n";
  read(kReq + second);
  ASSERT_NE(conn.tx, nullptr);
  EXPECT_EQ(conn.tx->name, "GET /a/b");
  write(kResp + "HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n");  // HEAD: no body follows
  ASSERT_EQ(Collected::txs.size(), 2u);
  EXPECT_EQ(Collected::txs[1]->name, "HEAD /second");
}

TEST_F(HttpConnTest, RequestBodyIsCountedAndNotTakenForTheNextRequest) {
  std::string post = "POST /upload HTTP/1.1\r\nContent-Length: 11\r\n\r\n";
  read(post + "hello");
  read(" world");
  ASSERT_NE(conn.tx, nullptr);
  EXPECT_EQ(conn.tx->bytes_read, post.size() + 11);
  write("HTTP/1.1 204 No Content\r\n\r\n");
  read(kReq);
  write(kResp);
  ASSERT_EQ(Collected::txs.size(), 2u);
  EXPECT_EQ(Collected::txs[0]->name, "POST /upload");
  EXPECT_EQ(Collected::txs[0]->status, 204);
  EXPECT_EQ(Collected::txs[1]->name, "GET /a/b");
}

TEST_F(HttpConnTest, ChunkedResponseEndsAtTheLastChunk) {
  read(kReq);
  write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n");
  EXPECT_TRUE(Collected::txs.empty());
  write("0\r\n\r\n");
  ASSERT_EQ(Collected::txs.size(), 1u);
}

TEST_F(HttpConnTest, ServerErrorIsAnError) {
  read(kReq);
  write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->status, 503);
  EXPECT_EQ(Collected::txs[0]->error, "HTTP 503");
}

TEST_F(HttpConnTest, CloseMidResponseEndsWithAnError) {
  read(kReq);
  write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
  conn.on_close();
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_FALSE(Collected::txs[0]->error.empty());
}

TEST_F(HttpConnTest, UntilCloseResponseEndsCleanlyAtClose) {
  read("GET /old HTTP/1.0\r\n\r\n");
  write("HTTP/1.0 200 OK\r\n\r\nbody until close");
  EXPECT_TRUE(Collected::txs.empty());
  conn.on_close();
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_TRUE(Collected::txs[0]->error.empty());
  EXPECT_EQ(Collected::txs[0]->status, 200);
}

TEST_F(HttpConnTest, NonHttpConnectionIsNotWatched) {
  read(std::string("\x16\x03\x01\x00\xa5\x01", 6));
  EXPECT_FALSE(conn.watching);
  read(kReq);  // later bytes are not taken for a request
  EXPECT_EQ(conn.tx, nullptr);
}

TEST_F(HttpConnTest, OversizedHeadIsGivenUp) {
  read("GET / HTTP/1.1\r\n");
  read("X-Big: " + std::string(http::kMaxHead, 'a') + "\r\n");
  EXPECT_FALSE(conn.watching);
  EXPECT_EQ(conn.tx, nullptr);
}

TEST_F(HttpConnTest, InboundTraceparentSetsTheTraceContext) {
  read("GET / HTTP/1.1\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\n");
  ASSERT_NE(conn.tx, nullptr);
  EXPECT_EQ(conn.tx->parent_span_id, 0xb7ad6b7169203331ull);
  EXPECT_EQ(conn.tx->trace_id[0], 0x0a);
}

// tracestate lines (any case, split by other headers) combined in order, baggage joined, flags kept; the
// same head read in pieces gives the same (the buffered path and the in-place one agree).
TEST_F(HttpConnTest, InboundTracestateAndBaggageAreKept) {
  const std::string head =
      "GET / HTTP/1.1\r\nTraceState: vendor1=a\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03\r\n"
      "Host: x\r\ntracestate: vendor2=b\r\nbaggage: k=v\r\nBaggage: j=w\r\n\r\n";
  for (size_t piece : {head.size(), size_t(7)}) {
    conn.reset("10.0.0.7:5555");
    for (size_t i = 0; i < head.size(); i += piece) read(head.substr(i, piece));
    ASSERT_NE(conn.tx, nullptr);
    EXPECT_EQ(conn.tx->parent_span_id, 0xb7ad6b7169203331ull);
    EXPECT_EQ(conn.tx->trace_flags, 3);
    EXPECT_EQ(conn.tx->tracestate, "vendor1=a,vendor2=b");
    EXPECT_EQ(conn.tx->baggage, "k=v,j=w");
    conn.on_close();
  }
}

// Two traceparent lines are invalid as a whole (Trace Context §3.2): a new trace, tracestate not kept,
// baggage still passed on.
TEST_F(HttpConnTest, DuplicatedTraceparentStartsANewTrace) {
  read("GET / HTTP/1.1\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
       "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\ntracestate: a=1\r\nbaggage: k=v\r\n\r\n");
  ASSERT_NE(conn.tx, nullptr);
  EXPECT_EQ(conn.tx->parent_span_id, 0u);
  EXPECT_NE(conn.tx->trace_id[0] == 0x0a && conn.tx->trace_id[1] == 0xf7, true);
  EXPECT_EQ(conn.tx->trace_flags, -1);
  EXPECT_EQ(conn.tx->tracestate, "");
  EXPECT_EQ(conn.tx->baggage, "k=v");
}

// Found by agent.fuzz_http_inbound (LeakSanitizer): closing a connection with a pipelined request waiting
// ended the current transaction and then began one for the waiting request, which nothing ever ended.
TEST_F(HttpConnTest, CloseWithAPipelinedRequestWaitingBeginsNothing) {
  read(kReq + kReq);
  ASSERT_NE(conn.tx, nullptr);
  conn.on_close();
  EXPECT_EQ(conn.tx, nullptr);
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->error, "connection closed before the response was complete");
}

// A new connection on the same descriptor number whose close was not seen ends the old one's request.
TEST_F(HttpConnTest, ResetEndsTheRequestOfTheConnectionBefore) {
  read(kReq);
  ASSERT_NE(conn.tx, nullptr);
  conn.reset("10.0.0.8:6000", 9);
  EXPECT_EQ(conn.tx, nullptr);
  EXPECT_EQ(Collected::txs.size(), 1u);
}

// Values the W3C rules tell a receiver to ignore start a new trace. The inbound side had a parser of its
// own that took all of these (found by agent.fuzz_traceparent comparing it with traceparent.h's).
TEST_F(HttpConnTest, MalformedInboundTraceparentStartsANewTrace) {
  for (const char* v : {"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",  // upper case
                        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",  // v00 is 55 chars
                        "zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  // version not hex
                        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-xx",  // flags not hex
                        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
                        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"}) {
    conn.reset("10.0.0.7:5555");
    read(std::string("GET / HTTP/1.1\r\ntraceparent: ") + v + "\r\n\r\n");
    ASSERT_NE(conn.tx, nullptr) << v;
    EXPECT_EQ(conn.tx->parent_span_id, 0u) << v;
    const uint8_t theirs[16] = {0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
                                0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c};
    EXPECT_NE(memcmp(conn.tx->trace_id, theirs, 16), 0) << v;
    conn.on_close();
  }
}

// Many requests and responses of every framing on one keep-alive connection, cut at random points:
// one transaction per request, with its exact request and response bytes.
TEST_F(HttpConnTest, RandomSplitsOfMixedTrafficKeepExactBytes) {
  std::mt19937 rng(12345);
  struct Exchange {
    std::string name, req, resp;
    int status;
  };
  std::vector<Exchange> ex;
  for (int i = 0; i < 200; ++i) {
    Exchange e;
    int kind = int(rng() % 5);
    std::string path = "/r" + std::to_string(i);
    std::string body(rng() % 300, 'b');
    if (kind == 0) {
      e.req = "POST " + path + " HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      e.name = "POST " + path;
    } else if (kind == 1) {
      e.req = "HEAD " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
      e.name = "HEAD " + path;
    } else {
      e.req = "GET " + path + "?i=" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
      e.name = "GET " + path;
    }
    switch (rng() % 4) {
      case 0:
        e.status = 200;
        e.resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kind == 1 ? 999 : body.size()) + "\r\n\r\n" +
                 (kind == 1 ? "" : body);
        break;
      case 1:
        e.status = 201;
        e.resp = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n";
        if (kind != 1) e.resp += "3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
        break;
      case 2:
        e.status = 204;
        e.resp = "HTTP/1.1 204 No Content\r\n\r\n";
        break;
      default:
        e.status = 200;
        e.resp = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" +
                 std::string(kind == 1 ? "" : "ok");
    }
    ex.push_back(e);
  }
  auto feed = [&](const std::string& s, bool is_read) {
    size_t i = 0;
    while (i < s.size()) {
      size_t n = 1 + rng() % 40;
      n = std::min(n, s.size() - i);
      if (is_read) conn.on_read(s.data() + i, n);
      else conn.on_write(s.data() + i, n);
      i += n;
    }
  };
  for (auto& e : ex) {
    feed(e.req, true);
    feed(e.resp, false);
  }
  ASSERT_EQ(Collected::txs.size(), ex.size());
  for (size_t i = 0; i < ex.size(); ++i) {
    const auto& t = *Collected::txs[i];
    EXPECT_EQ(t.name, ex[i].name) << i;
    EXPECT_EQ(t.status, ex[i].status) << i;
    EXPECT_EQ(t.bytes_read, ex[i].req.size()) << i;
    EXPECT_EQ(t.bytes_written, ex[i].resp.size()) << i;
    EXPECT_EQ(test::gap_sum(t), t.elapsed_ns);
  }
}

namespace {

std::string h2frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  uint32_t n = uint32_t(payload.size());
  f += char(n >> 16);
  f += char(n >> 8);
  f += char(n);
  f += char(type);
  f += char(flags);
  f += char(stream >> 24);
  f += char(stream >> 16);
  f += char(stream >> 8);
  f += char(stream);
  return f + payload;
}

// HPACK literal without indexing, new name.
std::string lit(const std::string& n, const std::string& v) {
  return std::string(1, '\0') + char(n.size()) + n + char(v.size()) + v;
}

const std::string kUpgrade =
    "GET /up?x=1 HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
    "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n";
const std::string kSwitch = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

}  // namespace

// RFC 7540 §3.2: the request with Upgrade: h2c answered 101 is stream 1 of the HTTP/2 connection that
// follows; its transaction ends with stream 1's response, and later streams are transactions of their own.
TEST_F(HttpConnTest, UpgradeH2cMakesTheRequestStreamOne) {
  for (size_t step : {size_t(0), size_t(1), size_t(7)}) {
    Collected::install();
    conn.reset("10.0.0.7:5555");
    read(kUpgrade, step);
    ASSERT_NE(conn.tx, nullptr);
    EXPECT_EQ(tx::thread_current(), conn.tx);
    std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    std::string settings = h2frame(4, 0, 0, "");
    // The server's 101, its SETTINGS and stream 1's response in one write; the client's preface read after.
    write(kSwitch + settings + h2frame(1, 4, 1, "\x8d") + h2frame(0, 1, 1, "hello"), step);  // :status 404 (static 13)
    EXPECT_EQ(conn.tx, nullptr);
    EXPECT_EQ(tx::thread_current(), nullptr) << "a stream of a multiplexed connection is no thread's request";
    ASSERT_EQ(Collected::txs.size(), 1u);
    read(preface + settings + h2frame(1, 5, 3, "\x82\x86" + lit(":path", "/next") + lit(":authority", "h")), step);
    write(h2frame(1, 5, 3, "\x88"), step);
    ASSERT_EQ(Collected::txs.size(), 2u);
    const Transaction& up = *Collected::txs[0];
    EXPECT_EQ(up.name, "GET /up");
    EXPECT_EQ(up.status, 404);
    EXPECT_EQ(up.error, "");
    EXPECT_EQ(up.bytes_read, kUpgrade.size());
    EXPECT_EQ(up.bytes_written, kSwitch.size() + 10 + 14);
    int marks = 0;
    for (auto& a : up.attrs) marks += (a.key == "upgrade" && a.value == "h2c") + (a.key == "protocol" && a.value == "h2");
    EXPECT_EQ(marks, 2);
    EXPECT_EQ(Collected::txs[1]->name, "GET /next");
    EXPECT_EQ(Collected::txs[1]->status, 200);
    conn.on_close();
  }
}

// A server that does not upgrade answers as HTTP/1.1: the connection goes on as HTTP/1.1; a 101 to
// another upgrade (WebSocket) ends the request and the connection is not followed further.
TEST_F(HttpConnTest, UpgradeNotTakenOrNotH2c) {
  read(kUpgrade);
  write(kResp);
  read(kReq);
  write(kResp);
  ASSERT_EQ(Collected::txs.size(), 2u);
  EXPECT_EQ(Collected::txs[0]->status, 200);
  EXPECT_EQ(Collected::txs[1]->name, "GET /a/b");
  conn.reset("10.0.0.7:5555");
  read("GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n" + h2frame(1, 4, 1, "\x88"));
  ASSERT_EQ(Collected::txs.size(), 3u);
  EXPECT_EQ(Collected::txs[2]->status, 101);
  EXPECT_FALSE(conn.h2_active);
}
