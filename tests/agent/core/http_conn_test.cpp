// Inbound HTTP tracking over one connection: requests split over reads, responses split over writes,
// keep-alive, pipelining, bodies, closes in the middle of a response.
#include "http_conn.h"

#include <gtest/gtest.h>

#include <string>

#include "test_support.h"

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
  for (auto& a : conn.tx->attrs) has_query |= a.key == "query" && a.value == "q=1";
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
