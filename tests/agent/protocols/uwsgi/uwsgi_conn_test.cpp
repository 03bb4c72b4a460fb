// Inbound uwsgi through the real connection tracker (HttpConn hands the connection over on its first
// bytes) and the real transaction core: a transaction per request packet, split at every offset, status
// from the application's status line, body bytes both ways, trace context from the vars, connections cut
// in the middle, and bytes that are not uwsgi.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "core/counters.h"
#include "protocols/http1/http_conn.h"
#include "protocols/tracecontext/traceparent.h"
#include "protocols/uwsgi/uwsgi_packet.h"
#include "support/test_support.h"
#include "uwsgi_bytes.h"

using namespace txray;
using namespace txray::test::uwsgi_bytes;
using txray::test::Collected;
using txray::test::FakeClock;

namespace {

const std::string kTp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

std::string attr(const Transaction& t, std::string_view key) {
  for (auto& a : t.attrs)
    if (a.key == key) return a.value;
  return "<none>";
}

class UwsgiConnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeClock::install();
    Collected::install();
    counters().reset();
    conn.reset("unix", 7);
  }
  void TearDown() override {
    conn.on_close();
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

}  // namespace

TEST(UwsgiPacket, FirstBytesOfAPacketAreRecognisedByteByByte) {
  std::string p = request("GET", "/");
  for (size_t n = 0; n < 7; ++n) EXPECT_EQ(uwsgi::looks_like_packet(p.data(), n), 0) << n;
  EXPECT_EQ(uwsgi::looks_like_packet(p.data(), p.size()), 1);
  EXPECT_EQ(uwsgi::looks_like_packet("GET / HTTP/1.1\r\n", 16), -1);
  std::string fcgi = std::string("\x01\x01\x00\x01\x00\x08\x00\x00", 8);
  EXPECT_EQ(uwsgi::looks_like_packet(fcgi.data(), fcgi.size()), -1);
  std::string m1 = p;
  m1[0] = 5;  // modifier1 5: PSGI, not a WSGI/CGI request
  EXPECT_EQ(uwsgi::looks_like_packet(m1.data(), m1.size()), -1);
  std::string m2 = p;
  m2[3] = 1;
  EXPECT_EQ(uwsgi::looks_like_packet(m2.data(), m2.size()), -1);
  std::string tiny = packet({{"A", ""}});  // 5 bytes of vars: the smallest that holds a var
  EXPECT_EQ(uwsgi::looks_like_packet(tiny.data(), tiny.size()), 1);
  std::string small = tiny;
  small[1] = 4;
  EXPECT_EQ(uwsgi::looks_like_packet(small.data(), small.size()), -1);
  std::string lower = packet({{"abc", "x"}});
  EXPECT_EQ(uwsgi::looks_like_packet(lower.data(), lower.size()), -1);
  std::string long_key = packet({{std::string(65, 'K'), "x"}});
  EXPECT_EQ(uwsgi::looks_like_packet(long_key.data(), long_key.size()), -1);
}

TEST(UwsgiPacket, VarsSplitAtEveryOffsetGiveTheSameVars) {
  std::string huge(uwsgi::VarsReader::kMaxValue + 10, 'y');
  std::string p = packet({{"SHORT", "v"}, {"LONG", std::string(300, 'x')}, {"", "empty key"}, {"HUGE", huge},
                          {std::string(100, 'N'), "never kept"}, {"LAST", ""}}) + "BODY";
  struct Sink : uwsgi::VarsReader::Sink {
    std::vector<std::tuple<std::string, size_t, bool>> got;
    bool wanted(std::string_view k) override { return k != "SHORT"; }
    void on_var(std::string_view k, std::string_view v, bool t) override { got.emplace_back(k, v.size(), t); }
  };
  for (size_t cut = 0; cut <= p.size(); ++cut) {
    uwsgi::VarsReader r;
    Sink s;
    size_t used = r.feed(p.data(), cut, s);
    used += r.feed(p.data() + used, p.size() - used, s);
    ASSERT_TRUE(r.done()) << cut;
    EXPECT_EQ(p.substr(used), "BODY") << "what follows the vars is the caller's: " << cut;
    ASSERT_EQ(s.got.size(), 4u) << cut;
    EXPECT_EQ(s.got[0], std::make_tuple(std::string("LONG"), size_t(300), false));
    EXPECT_EQ(s.got[1], std::make_tuple(std::string(""), size_t(9), false));
    EXPECT_EQ(s.got[2], std::make_tuple(std::string("HUGE"), uwsgi::VarsReader::kMaxValue, true));
    EXPECT_EQ(s.got[3], std::make_tuple(std::string("LAST"), size_t(0), false));
  }
}

TEST(UwsgiPacket, VarsThatOverrunTheDatasizeAreDead) {
  struct Sink : uwsgi::VarsReader::Sink {
    bool wanted(std::string_view) override { return true; }
    void on_var(std::string_view, std::string_view, bool) override {}
  } s;
  std::string p = packet({{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/"}});
  for (uint16_t size : {uint16_t(5), uint16_t(17), uint16_t(p.size() - 5)}) {
    std::string bad = p;
    bad[1] = char(size & 0xff);
    bad[2] = char(size >> 8);
    uwsgi::VarsReader r;
    r.feed(bad.data(), bad.size(), s);
    EXPECT_TRUE(r.dead()) << size;
  }
  std::string one_byte_left = p;  // a datasize that leaves one byte after a var: no room for a key length
  one_byte_left[1] = char(p.size() - 4 + 1);
  uwsgi::VarsReader r;
  r.feed(one_byte_left.data(), one_byte_left.size(), s);
  r.feed("\0", 1, s);
  EXPECT_TRUE(r.dead());
}

TEST_F(UwsgiConnTest, OneRequestSplitAtEveryOffsetMakesOneNamedTransaction) {
  std::string req = request("POST", "/items/42?id=42&x=1", "0123456789", kTp);
  std::string resp = answer(201, "created!");
  for (size_t cut = 0; cut <= req.size(); ++cut) {
    Collected::txs.clear();
    conn.reset("unix", 7);
    conn.on_read(req.data(), cut);
    conn.on_read(req.data() + cut, req.size() - cut);
    ASSERT_TRUE(conn.in_request()) << cut;
    Transaction* t = conn.request(0);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(tx::thread_current(), t) << "the reading thread's request";
    EXPECT_EQ(t->req_fd, 7);
    FakeClock::advance(5000, 2000);
    size_t wcut = cut % (resp.size() + 1);
    conn.on_write(resp.data(), wcut);
    conn.on_write(resp.data() + wcut, resp.size() - wcut);
    ASSERT_EQ(Collected::txs.size(), 1u) << cut;
    const Transaction& d = *Collected::txs[0];
    EXPECT_EQ(d.name, "POST /items/42");
    EXPECT_EQ(d.kind, "http");
    EXPECT_EQ(d.status, 201);
    EXPECT_TRUE(d.error.empty());
    EXPECT_EQ(attr(d, "protocol"), "uwsgi");
    EXPECT_EQ(attr(d, "query"), "id=?&x=?");
    EXPECT_EQ(attr(d, "host"), "example.test");
    EXPECT_EQ(attr(d, "user_agent"), "curl/7.88.1");
    EXPECT_EQ(d.client_addr, "unix");
    EXPECT_EQ(d.bytes_read, 10u) << "the request body";
    EXPECT_EQ(d.bytes_written, resp.size()) << "the response";
    EXPECT_EQ(d.elapsed_ns, 5000u);
    TraceParent tp;
    ASSERT_TRUE(parse_traceparent(kTp, tp));
    EXPECT_EQ(0, std::memcmp(d.trace_id, tp.trace_id, 16));
    EXPECT_EQ(d.parent_span_id, tp.parent_id);
    EXPECT_EQ(d.trace_flags, 1);
    EXPECT_EQ(tx::thread_current(), nullptr);
  }
  EXPECT_EQ(counters().streams_unparsed.load(), 0u);
}

TEST_F(UwsgiConnTest, ByteByByteBothWays) {
  read(request("GET", "/slow?q=1"), 1);
  write(answer(200, "hello world"), 1);
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->name, "GET /slow");
  EXPECT_EQ(Collected::txs[0]->status, 200);
}

TEST_F(UwsgiConnTest, ServerErrorStatusIsAnError) {
  read(request("GET", "/boom"));
  write(answer(503, "down"));
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->status, 503);
  EXPECT_EQ(Collected::txs[0]->error, "HTTP 503");
}

TEST_F(UwsgiConnTest, ResponseWithoutLengthEndsAtClose) {
  read(request("GET", "/stream"));
  write(answer(200, "part one, ", false));
  write("part two");
  EXPECT_TRUE(Collected::txs.empty());
  conn.on_close();
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_TRUE(Collected::txs[0]->error.empty());
  EXPECT_EQ(Collected::txs[0]->bytes_written, answer(200, "part one, ", false).size() + 8);
}

TEST_F(UwsgiConnTest, CloseBeforeTheResponseEndedIsAnError) {
  read(request("GET", "/cut"));
  write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
  conn.on_close();
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->error, "connection closed before the response was complete");
}

TEST_F(UwsgiConnTest, FileWrapperBodyWrittenBySendfile) {
  read(request("GET", "/file"));
  write("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n");
  conn.on_write_opaque(5000);
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->bytes_written, std::string("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n").size() + 5000);
}

TEST_F(UwsgiConnTest, PacketsOneAfterAnotherOnOneConnection) {
  for (int i = 1; i <= 5; ++i) {
    read(request("GET", "/r" + std::to_string(i), std::string(size_t(i), 'b')));
    write(answer(200 + i, "ok"));
  }
  ASSERT_EQ(Collected::txs.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Collected::txs[size_t(i)]->name, "GET /r" + std::to_string(i + 1));
    EXPECT_EQ(Collected::txs[size_t(i)]->status, 201 + i);
    EXPECT_EQ(Collected::txs[size_t(i)]->bytes_read, uint64_t(i + 1));
  }
  EXPECT_FALSE(conn.in_request());
}

TEST_F(UwsgiConnTest, ScriptNameWhenNoRequestUriAndTracestateTaken) {
  read(packet({{"REQUEST_METHOD", "GET"}, {"SCRIPT_NAME", "/app"}, {"PATH_INFO", "/users"},
               {"QUERY_STRING", "page=2"}, {"HTTP_TRACEPARENT", kTp}, {"HTTP_TRACESTATE", "vendor=abc"}}));
  write(answer(200, ""));
  ASSERT_EQ(Collected::txs.size(), 1u);
  const Transaction& d = *Collected::txs[0];
  EXPECT_EQ(d.name, "GET /app/users");
  EXPECT_EQ(attr(d, "query"), "page=?");
  EXPECT_NE(d.parent_span_id, 0u);
  EXPECT_EQ(std::string(d.tracestate), "vendor=abc");
}

TEST_F(UwsgiConnTest, OfTwoTraceparentsTheFirstCounts) {
  const std::string other = "00-11111111111111111111111111111111-2222222222222222-00";
  read(packet({{"HTTP_TRACEPARENT", kTp}, {"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/"},
               {"HTTP_TRACEPARENT", other}}));
  write(answer(200, ""));
  ASSERT_EQ(Collected::txs.size(), 1u);
  TraceParent tp;
  ASSERT_TRUE(parse_traceparent(kTp, tp));
  EXPECT_EQ(Collected::txs[0]->parent_span_id, tp.parent_id);
}

TEST_F(UwsgiConnTest, InvalidTraceparentStartsAnOwnTrace) {
  read(packet({{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/"}, {"HTTP_TRACEPARENT", "00-zz-yy-01"}}));
  write(answer(200, ""));
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->parent_span_id, 0u);
}

TEST_F(UwsgiConnTest, ModifierOtherThanZeroIsNotFollowed) {
  std::string p = packet(nginx_vars("GET", "/"), 5);
  read(p);
  write(answer(200, ""));
  EXPECT_TRUE(Collected::txs.empty());
  EXPECT_FALSE(conn.watching);
}

TEST_F(UwsgiConnTest, VarsOverrunningTheDatasizeEndTheFollowingOnce) {
  std::string p = request("GET", "/a");
  p[1] = char(uint8_t(p[1]) - 3);  // the last var's value runs past the datasize
  read(p);
  EXPECT_TRUE(Collected::txs.empty());
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  EXPECT_FALSE(conn.watching);
  read(p);
  write(answer(200, ""));
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
}

TEST_F(UwsgiConnTest, MoreThanTheBodyBeforeTheAnswerEndsTheRequestOnce) {
  read(request("POST", "/a", "12345") + "extra bytes");
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->error, "uwsgi stream not understood");
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  write(answer(200, "late"));
  read(request("GET", "/b"));
  EXPECT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
}

TEST_F(UwsgiConnTest, HttpStillWorksOnTheNextConnectionOfTheSlot) {
  read(request("GET", "/a"));
  write(answer(200, "x"));
  conn.reset("1.2.3.4:5", 7);
  read("GET /h HTTP/1.1\r\nHost: x\r\n\r\n");
  write("HTTP/1.1 204 No Content\r\n\r\n");
  ASSERT_EQ(Collected::txs.size(), 2u);
  EXPECT_EQ(Collected::txs[1]->name, "GET /h");
  EXPECT_EQ(Collected::txs[1]->status, 204);
}

TEST_F(UwsgiConnTest, RandomSplitsGiveTheSameTransactions) {
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
    feed(request("GET", "/p" + std::to_string(i), std::string(size_t(i * 10), 'q')), true);
    feed(answer(400 + i, std::string(size_t(i), 'o')), false);
  }
  ASSERT_EQ(Collected::txs.size(), 20u);
  for (int i = 1; i <= 20; ++i) {
    const Transaction& t = *Collected::txs[size_t(i - 1)];
    EXPECT_EQ(t.name, "GET /p" + std::to_string(i));
    EXPECT_EQ(t.status, 400 + i);
    EXPECT_EQ(t.bytes_read, uint64_t(i * 10));
    EXPECT_EQ(t.bytes_written, answer(400 + i, std::string(size_t(i), 'o')).size()) << i;
  }
}

// Every byte of a request changed in turn, every value: the tracker never makes more than one
// transaction for the packet, ends every one it begins, and counts a stream it gives up at most once.
TEST_F(UwsgiConnTest, EveryByteChangedNeverMoreThanOneTransaction) {
  std::string req = request("POST", "/x?y=1", "body");
  std::string resp = answer(200, "ok");
  for (size_t at = 0; at < req.size(); ++at) {
    for (int v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string bad = req;
      if (uint8_t(bad[at]) == v) continue;
      bad[at] = char(v);
      Collected::txs.clear();
      counters().reset();
      conn.reset("unix", 7);
      read(bad, 1 + at % 5);
      write(resp, 3);
      conn.on_close();
      EXPECT_LE(Collected::txs.size(), 1u) << at << " " << v;
      EXPECT_LE(counters().streams_unparsed.load(), 1u) << at << " " << v;
      EXPECT_FALSE(conn.in_request());
    }
  }
}
