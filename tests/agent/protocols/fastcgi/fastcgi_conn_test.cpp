// Inbound FastCGI through the real connection tracker (HttpConn hands the connection over on its first
// bytes) and the real transaction core: requests split anywhere, multiplexed ids, keep-alive, status,
// bytes, trace context, connections cut in the middle, bytes that are not FastCGI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "core/counters.h"
#include "protocols/fastcgi/fastcgi_conn.h"
#include "protocols/fastcgi/fastcgi_records.h"
#include "protocols/http1/http_conn.h"
#include "protocols/tracecontext/traceparent.h"
#include "fcgi_bytes.h"
#include "support/test_support.h"

using namespace txray;
using namespace txray::test::fcgi_bytes;
using txray::test::Collected;
using txray::test::FakeClock;

namespace {

const std::string kTp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

std::string attr(const Transaction& t, std::string_view key) {
  for (auto& a : t.attrs)
    if (a.key == key) return a.value;
  return "<none>";
}

class FcgiConnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeClock::install();
    Collected::install();
    counters().reset();
    conn.reset("unix", 7);
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
  std::string request(uint16_t id, std::string_view method, std::string_view uri, std::string_view body = {},
                      bool keep = false, std::string_view tp = {}) {
    return begin(id, keep) + params(id, nginx_params(method, uri, tp)) + stdin_(id, body);
  }
  void multiplexed();
  HttpConn conn;
};

}  // namespace

TEST(FcgiRecords, FirstBytesOfABeginRequestAreRecognisedByteByByte) {
  std::string b = begin(1) + params(1, {{"A", "b"}});
  // decided with the role (10 bytes), so that it does not depend on the reads' sizes: a header read
  // alone was taken although its body named no role, the same bytes in one read were not
  for (size_t n = 0; n < 10; ++n) EXPECT_EQ(fcgi::looks_like_begin(b.data(), n), 0) << n;
  for (size_t n = 10; n <= b.size(); ++n) EXPECT_EQ(fcgi::looks_like_begin(b.data(), n), 1) << n;
  EXPECT_EQ(fcgi::looks_like_begin("GET / HTTP/1.1\r\n", 16), -1);
  std::string v2 = b;
  v2[0] = 2;
  EXPECT_EQ(fcgi::looks_like_begin(v2.data(), v2.size()), -1);
  std::string id0 = b;
  id0[2] = id0[3] = 0;
  EXPECT_EQ(fcgi::looks_like_begin(id0.data(), id0.size()), -1);
  std::string role9 = b;
  role9[9] = 9;
  EXPECT_EQ(fcgi::looks_like_begin(role9.data(), role9.size()), -1);
}

TEST(FcgiRecords, FourByteLengthsAndLongValuesKeptUpToTheBound) {
  std::string long_value(300, 'x');
  std::string huge(fcgi::NameValueReader::kMaxValue + 10, 'y');
  std::string body;
  fcgi::append_pair(body, "SHORT", "v");
  fcgi::append_pair(body, "LONG", long_value);
  fcgi::append_pair(body, std::string(200, 'N'), "skipped");  // a 4-byte name length
  fcgi::append_pair(body, "HUGE", huge);
  EXPECT_EQ(uint8_t(body[body.find("LONG") - 4]) & 0x80, 0x80);  // value length in 4 bytes
  struct Sink : fcgi::NameValueReader::Sink {
    std::vector<std::tuple<std::string, size_t, bool>> got;
    bool wanted(std::string_view n) override { return n != "SHORT"; }
    void on_pair(std::string_view n, std::string_view v, bool t) override { got.emplace_back(n, v.size(), t); }
  };
  for (size_t step : {size_t(1), size_t(3), body.size()}) {
    fcgi::NameValueReader r;
    Sink s;
    for (size_t i = 0; i < body.size(); i += step) r.feed(body.data() + i, std::min(step, body.size() - i), s);
    EXPECT_TRUE(r.complete());
    ASSERT_EQ(s.got.size(), 2u) << step;  // SHORT not wanted, the 200-byte name never is
    EXPECT_EQ(s.got[0], std::make_tuple(std::string("LONG"), size_t(300), false));
    EXPECT_EQ(s.got[1], std::make_tuple(std::string("HUGE"), fcgi::NameValueReader::kMaxValue, true));
  }
}

TEST(FcgiRecords, CgiStatusLine) {
  for (size_t step : {size_t(1), size_t(5), size_t(1000)}) {
    fcgi::CgiStatus s;
    std::string out = "X-Powered-By: PHP/8.2\r\nStatus: 404 Not Found\r\nContent-type: text/html\r\n\r\nStatus: 500\r\n";
    for (size_t i = 0; i < out.size(); i += step) s.feed(out.data() + i, std::min(step, out.size() - i));
    EXPECT_TRUE(s.head_done());
    EXPECT_EQ(s.status(), 404) << "the body's text is not the head";
  }
  fcgi::CgiStatus none;
  none.feed("Content-type: text/html\n\nhi", 27);
  EXPECT_EQ(none.status(), 200);
}

TEST_F(FcgiConnTest, OneRequestSplitAnywhereMakesOneNamedTransaction) {
  std::string req = request(1, "GET", "/index.php?id=42&x=1", "", false, kTp);
  std::string resp = stdout_(1, "Status: 201 Created\r\nContent-type: text/plain\r\n\r\nhello") + stdout_(1, "") + end(1);
  for (size_t step : {size_t(1), size_t(7), size_t(13), req.size()}) {
    Collected::txs.clear();
    conn.reset("unix", 7);
    read(req, step);
    ASSERT_TRUE(conn.in_request()) << step;
    Transaction* t = conn.request(0);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(tx::thread_current(), t) << "the reading thread's request";
    EXPECT_EQ(t->req_fd, 7);
    FakeClock::advance(5000, 2000);
    write(resp, step);
    ASSERT_EQ(Collected::txs.size(), 1u) << step;
    const Transaction& d = *Collected::txs[0];
    EXPECT_EQ(d.name, "GET /index.php");
    EXPECT_EQ(d.kind, "http");
    EXPECT_EQ(d.status, 201);
    EXPECT_TRUE(d.error.empty());
    EXPECT_EQ(attr(d, "protocol"), "fastcgi");
    EXPECT_EQ(attr(d, "query"), "id=?&x=?");
    EXPECT_EQ(attr(d, "host"), "example.test");
    EXPECT_EQ(attr(d, "user_agent"), "curl/7.88.1");
    EXPECT_EQ(d.client_addr, "unix");
    EXPECT_EQ(d.bytes_read, 0u);
    EXPECT_EQ(d.bytes_written, std::string("Status: 201 Created\r\nContent-type: text/plain\r\n\r\nhello").size());
    EXPECT_EQ(d.elapsed_ns, 5000u);
    TraceParent tp;
    ASSERT_TRUE(parse_traceparent(kTp, tp));
    EXPECT_EQ(0, std::memcmp(d.trace_id, tp.trace_id, 16));
    EXPECT_EQ(d.parent_span_id, tp.parent_id);
    EXPECT_EQ(d.trace_flags, 1);
    EXPECT_EQ(tx::thread_current(), nullptr);
  }
}

TEST_F(FcgiConnTest, StdinBytesAndDefaultStatus) {
  read(request(1, "POST", "/form.php", std::string(1000, 'b')));
  write(stdout_(1, "Content-type: text/html\r\n\r\nok") + end(1));
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->name, "POST /form.php");
  EXPECT_EQ(Collected::txs[0]->status, 200);
  EXPECT_EQ(Collected::txs[0]->bytes_read, 1000u);
}

TEST_F(FcgiConnTest, ServerErrorStatusIsAnError) {
  read(request(1, "GET", "/boom.php"));
  write(stdout_(1, "Status: 503 Service Unavailable\r\n\r\n") + end(1));
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->status, 503);
  EXPECT_EQ(Collected::txs[0]->error, "HTTP 503");
}

TEST_F(FcgiConnTest, KeepConnGivesOneTransactionPerRequestInOrder) {
  for (int i = 1; i <= 5; ++i) {
    read(request(1, "GET", "/r" + std::to_string(i) + ".php", "", true));
    write(stdout_(1, "Status: 200 OK\r\n\r\n") + end(1));
  }
  ASSERT_EQ(Collected::txs.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Collected::txs[i]->name, "GET /r" + std::to_string(i + 1) + ".php");
  EXPECT_FALSE(conn.in_request());
}

// On a thread of its own: three requests in flight make a thread an event loop for good (attribution.h).
TEST_F(FcgiConnTest, MultiplexedIdsEndByTheirOwnEndRequest) {
  std::thread([&] { multiplexed(); }).join();
}

void FcgiConnTest::multiplexed() {
  read(request(1, "GET", "/a.php", "", true) + request(2, "GET", "/b.php", "", true) +
       request(3, "GET", "/c.php", "", true));
  EXPECT_EQ(conn.request(0)->name, "GET /c.php") << "the one begun last";
  write(stdout_(2, "Status: 404\r\n\r\n") + end(2));
  write(stdout_(3, "\r\n") + stdout_(1, "Status: 302 Found\r\n\r\n") + end(1));
  write(end(3));
  ASSERT_EQ(Collected::txs.size(), 3u);
  EXPECT_EQ(Collected::txs[0]->name, "GET /b.php");
  EXPECT_EQ(Collected::txs[0]->status, 404);
  EXPECT_EQ(Collected::txs[1]->name, "GET /a.php");
  EXPECT_EQ(Collected::txs[1]->status, 302);
  EXPECT_EQ(Collected::txs[2]->name, "GET /c.php");
  EXPECT_EQ(Collected::txs[2]->status, 200);
}

TEST_F(FcgiConnTest, CloseBeforeEndRequestEndsWithAnError) {
  read(request(1, "GET", "/slow.php"));
  write(stdout_(1, "Status: 200\r\n\r\npartial"));
  conn.on_close();
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->error, "connection closed before END_REQUEST");
}

TEST_F(FcgiConnTest, ProtocolStatusAndAbort) {
  read(request(1, "GET", "/a.php", "", true));
  write(end(1, 2));  // OVERLOADED
  read(request(1, "GET", "/b.php", "", true) + record(fcgi::kAbortRequest, 1, ""));
  write(end(1));
  ASSERT_EQ(Collected::txs.size(), 2u);
  EXPECT_EQ(Collected::txs[0]->error, "FastCGI OVERLOADED");
  EXPECT_EQ(Collected::txs[1]->error, "aborted by the web server (FCGI_ABORT_REQUEST)");
}

TEST_F(FcgiConnTest, ScriptNameWhenNoRequestUri) {
  std::string req = begin(1) + params(1, {{"REQUEST_METHOD", "GET"}, {"SCRIPT_NAME", "/app.php"},
                                          {"PATH_INFO", "/users"}, {"QUERY_STRING", "page=2"}}) + stdin_(1, "");
  read(req);
  write(stdout_(1, "\r\n") + end(1));
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->name, "GET /app.php/users");
  EXPECT_EQ(attr(*Collected::txs[0], "query"), "page=?");
}

TEST_F(FcgiConnTest, OfTwoTraceparentsTheFirstCounts) {
  const std::string other = "00-11111111111111111111111111111111-2222222222222222-00";
  std::string req = begin(1) + params(1, {{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/"},
                                          {"HTTP_TRACEPARENT", kTp}, {"HTTP_TRACEPARENT", other}}) + stdin_(1, "");
  read(req);
  write(end(1));
  ASSERT_EQ(Collected::txs.size(), 1u);
  TraceParent tp;
  ASSERT_TRUE(parse_traceparent(kTp, tp));
  EXPECT_EQ(Collected::txs[0]->parent_span_id, tp.parent_id);
}

TEST_F(FcgiConnTest, InvalidTraceparentStartsAnOwnTrace) {
  std::string req = begin(1) + params(1, {{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/"},
                                          {"HTTP_TRACEPARENT", "00-zz-yy-01"}}) + stdin_(1, "");
  read(req);
  write(end(1));
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->parent_span_id, 0u);
}

TEST_F(FcgiConnTest, GarbageAfterTheFirstRecordEndsTheFollowingOnce) {
  read(request(1, "GET", "/a.php"));
  std::string junk = "\x07garbage-garbage";
  write(junk);
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->error, "FastCGI stream not understood");
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  write(junk);
  read(junk);
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  EXPECT_FALSE(conn.watching);
}

TEST_F(FcgiConnTest, HttpStillWorksOnTheNextConnectionOfTheSlot) {
  read(request(1, "GET", "/a.php"));
  write(end(1));
  conn.reset("1.2.3.4:5", 7);
  read("GET /h HTTP/1.1\r\nHost: x\r\n\r\n");
  write("HTTP/1.1 204 No Content\r\n\r\n");
  ASSERT_EQ(Collected::txs.size(), 2u);
  EXPECT_EQ(Collected::txs[1]->name, "GET /h");
  EXPECT_EQ(Collected::txs[1]->status, 204);
}

TEST_F(FcgiConnTest, RandomSplitsGiveTheSameTransactions) {
  std::mt19937 rng(7);
  auto feed = [&](const std::string& s, bool in) {
    for (size_t k = 0; k < s.size();) {
      size_t n = std::min<size_t>(1 + rng() % 17, s.size() - k);
      if (in) conn.on_read(s.data() + k, n);
      else conn.on_write(s.data() + k, n);
      k += n;
    }
  };
  for (int i = 1; i <= 20; ++i) {
    uint16_t id = uint16_t(1 + i % 3);
    feed(request(id, "GET", "/p" + std::to_string(i), std::string(size_t(i * 10), 'q'), true), true);
    feed(stdout_(id, "Status: " + std::to_string(200 + i) + " X\r\n\r\n" + std::string(size_t(i), 'o')) + end(id),
         false);
  }
  ASSERT_EQ(Collected::txs.size(), 20u);
  for (int i = 1; i <= 20; ++i) {
    const Transaction& t = *Collected::txs[size_t(i - 1)];
    EXPECT_EQ(t.name, "GET /p" + std::to_string(i));
    EXPECT_EQ(t.status, 200 + i);
    EXPECT_EQ(t.bytes_read, uint64_t(i * 10));
    EXPECT_EQ(t.bytes_written, std::string("Status: 2xx X\r\n\r\n").size() + size_t(i));
  }
}
