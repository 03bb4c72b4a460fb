// Which transaction a step belongs to (agent/core/attribution.h): thread-per-request threads, event
// loops (handler windows, connect ownership), runtime hints, hand-off to other threads, and the
// unattributed container. Every scenario runs on a fresh thread: a thread's event-loop mark is sticky.
#include "core/attribution.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "hints/hint_board.h"
#include "hints/hint_protocol.h"
#include "protocols/dispatch/http_out.h"
#include "protocols/dispatch/socket_events.h"
#include "support/test_support.h"
#include "core/unattributed.h"

using namespace txray;
using txray::test::Collected;
using txray::test::FakeClock;

namespace {

class AttributionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeClock::install();
    Collected::install();
  }
  void TearDown() override {
    FakeClock::uninstall();
    tx::set_sink(nullptr);
  }
  // Runs fn on a new thread (fresh thread-local attribution state) and waits for it.
  template <typename Fn>
  static void on_thread(Fn fn) {
    std::thread th(fn);
    th.join();
  }
  // An accepted connection on fd whose request `GET path` has been read.
  static Transaction* request(int fd, const std::string& path) {
    sock::on_accept(fd, "10.0.0.1:4000");
    std::string head = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    sock::on_read(fd, head.data(), head.size());
    return sock::request_on(fd, 0, 0);
  }
  static void respond(int fd) {
    static const char r[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    sock::on_write(fd, r, sizeof r - 1);
  }
  // A call step of kind SQL made now (what a SQL hook does), returning the transaction it went to.
  static Transaction* sql_step() {
    Transaction* t = rec::current();
    StepRef s = rec::open(t, StepKind::SQL);
    rec::set_text(s, "SELECT 1");
    rec::close(s);
    return t;
  }
  static const Transaction* sent(const std::string& name) {
    for (auto& t : Collected::txs)
      if (t->name == name) return t.get();
    return nullptr;
  }
  static int count(const Transaction* t, StepKind k) {
    int n = 0;
    if (t)
      for (const Step& s : t->steps) n += s.kind == k;
    return n;
  }
};

TEST_F(AttributionTest, ThreadPerRequestKeepsTheThreadsRequest) {
  on_thread([] {
    Transaction* a = request(800, "/a");
    ASSERT_NE(a, nullptr);
    attr::close_window();  // a poll() before a blocking read must not matter here
    EXPECT_EQ(rec::current(), a);
    EXPECT_EQ(sql_step(), a);
    respond(800);
    EXPECT_EQ(rec::current_request(), nullptr);
    EXPECT_TRUE(unattr::is_container(rec::current()));  // a thread between requests: unattributed
  });
  EXPECT_EQ(count(sent("GET /a"), StepKind::SQL), 1);
}

TEST_F(AttributionTest, EventLoopUsesTheHandlerWindowAndNothingElse) {
  on_thread([] {
    Transaction* a = request(801, "/a");
    Transaction* b = request(802, "/b");  // two in flight: an event loop from now on
    ASSERT_TRUE(a && b);
    EXPECT_EQ(rec::current(), b);  // the handler of /b runs right after its read
    EXPECT_EQ(sql_step(), b);
    attr::close_window();  // back in epoll_wait
    EXPECT_EQ(rec::current_request(), nullptr);
    EXPECT_TRUE(unattr::is_container(sql_step()));
    const char body[] = "x";
    sock::on_read(801, body, 1);  // more of /a's bytes: /a's handler runs
    EXPECT_EQ(rec::current(), a);
    // A read on an outbound socket (a response of some call) closes the window.
    StepRef c = sock::on_connect_begin(850, "10.0.0.9", 80);
    sock::on_connect_end(850, c, 0, 0, 4000);
    sock::on_read(850, body, 1);
    EXPECT_EQ(rec::current_request(), nullptr);
    respond(801);
    respond(802);
  });
  EXPECT_EQ(count(sent("GET /a"), StepKind::SQL), 0);
  EXPECT_EQ(count(sent("GET /a"), StepKind::SOCKET), 1);  // connected in /a's window
  EXPECT_EQ(count(sent("GET /b"), StepKind::SQL), 1);
}

TEST_F(AttributionTest, FirstRequestOnANewConnectionBelongsToWhoConnected) {
  // nginx: a non-blocking connect in /a's handler completes after /b was read; the request written then
  // is /a's, not /b's.
  on_thread([] {
    Transaction* a = request(803, "/a");
    Transaction* b = request(804, "/b");
    ASSERT_TRUE(a && b);
    sock::on_read(803, "x", 1);  // window /a
    StepRef c = sock::on_connect_begin(851, "10.0.0.9", 80);
    sock::on_connect_end(851, c, -1, EINPROGRESS, 4001);
    attr::close_window();
    sock::on_read(804, "y", 1);  // window /b
    static const char req[] = "GET /up-a HTTP/1.1\r\nHost: up\r\n\r\n";
    sock::on_write(851, req, sizeof req - 1);
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    sock::on_read(851, resp, sizeof resp - 1);  // outside any window: the call still closes
    respond(803);
    respond(804);
  });
  const Transaction* a = sent("GET /a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(count(a, StepKind::HTTP_CALL), 1);
  EXPECT_EQ(count(sent("GET /b"), StepKind::HTTP_CALL), 0);
  for (const Step& s : a->steps)
    if (s.kind == StepKind::HTTP_CALL) {
      EXPECT_EQ(s.status, 200);
      EXPECT_FALSE(s.open);
    }
}

TEST_F(AttributionTest, HintsReplaceWindowsAndNameRequestsByToken) {
  on_thread([] {
    Transaction* a = request(805, "/a");
    Transaction* b = request(806, "/b");
    ASSERT_TRUE(a && b);
    char buf[hint::kBufferSize] = "Hnode";
    hint::Message m;
    ASSERT_TRUE(hint::parse(buf, sizeof buf, &m));
    hint::apply(m, buf, sizeof buf);
    EXPECT_STREQ(buf, "OK");
    EXPECT_EQ(rec::current_request(), nullptr);  // no window guessing on a hinted thread
    // R: the runtime's first request on fd 805 is /a: its token is /a's txid.
    snprintf(buf, sizeof buf, "R805:1");
    ASSERT_TRUE(hint::parse(buf, sizeof buf, &m));
    EXPECT_TRUE(hint::apply(m, buf, sizeof buf));
    char want[17];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)a->txid);
    EXPECT_STREQ(buf, want);
    snprintf(buf, sizeof buf, "R805:2");  // no second request on that connection yet
    ASSERT_TRUE(hint::parse(buf, sizeof buf, &m));
    EXPECT_FALSE(hint::apply(m, buf, sizeof buf));
    EXPECT_STREQ(buf, "0000000000000000");
    // E/L: enter /a by token, leave.
    snprintf(buf, sizeof buf, "E805:%s", want);
    ASSERT_TRUE(hint::parse(buf, sizeof buf, &m));
    hint::apply(m, buf, sizeof buf);
    EXPECT_EQ(sql_step(), a);
    attr::leave();
    EXPECT_TRUE(unattr::is_container(sql_step()));
    // A token of a request that is over never lands elsewhere.
    respond(805);
    attr::enter(ReqRef{805, a->txid});
    EXPECT_TRUE(unattr::is_container(rec::current()));
    attr::leave();
    respond(806);
  });
  EXPECT_EQ(count(sent("GET /a"), StepKind::SQL), 1);
  EXPECT_EQ(count(sent("GET /b"), StepKind::SQL), 0);
}

// agent.fuzz_hint_apply: "C" written with a buffer too short for the reply captured the request anyway;
// the program never saw the handle, so nothing could release it and the request was held captured.
TEST_F(AttributionTest, CaptureWhoseHandleCannotBeRepliedIsNotMade) {
  on_thread([] {
    Transaction* a = request(809, "/c");
    ASSERT_TRUE(a);
    char buf[hint::kBufferSize];
    snprintf(buf, sizeof buf, "C809:%016llx", (unsigned long long)a->txid);
    hint::Message m;
    ASSERT_TRUE(hint::parse(buf, sizeof buf, &m));
    EXPECT_FALSE(hint::apply(m, buf, 8));  // the program's buffer: 8 bytes, no room for a handle
    EXPECT_STREQ(buf, "NO");
    respond(809);
  });
  EXPECT_NE(sent("GET /c"), nullptr);  // ended and handed on, not held by a capture
}

TEST_F(AttributionTest, OutboundHintNamesTheCallsRequest) {
  on_thread([] {
    Transaction* a = request(807, "/a");
    Transaction* b = request(808, "/b");
    ASSERT_TRUE(a && b);
    attr::set_hinted();
    StepRef c = sock::on_connect_begin(852, "10.0.0.9", 80);  // a pool socket, connected by nobody's handler
    sock::on_connect_end(852, c, 0, 0, 4002);
    char buf[hint::kBufferSize];
    snprintf(buf, sizeof buf, "O852:808:%016llx", (unsigned long long)b->txid);
    hint::Message m;
    ASSERT_TRUE(hint::parse(buf, sizeof buf, &m));
    EXPECT_TRUE(hint::apply(m, buf, sizeof buf));
    static const char req[] = "GET /up-b HTTP/1.1\r\nHost: up\r\n\r\n";
    sock::on_write(852, req, sizeof req - 1);
    static const char resp[] = "HTTP/1.1 204 No Content\r\n\r\n";
    sock::on_read(852, resp, sizeof resp - 1);
    // The next request on the same socket, with no hint, is nobody's.
    sock::on_write(852, req, sizeof req - 1);
    sock::on_read(852, resp, sizeof resp - 1);
    respond(807);
    respond(808);
  });
  EXPECT_EQ(count(sent("GET /b"), StepKind::HTTP_CALL), 1);
  EXPECT_EQ(count(sent("GET /a"), StepKind::HTTP_CALL), 0);
  Transaction* c = unattr::container();
  std::lock_guard<std::mutex> l(c->mu);
  EXPECT_GE(count(c, StepKind::HTTP_CALL), 1);
}

// The hint board (hint_board.h): the shim names a call's request with two stores in its own memory; the
// agent takes the slot at the socket's next write, empties it, and never guesses past what it names.
TEST_F(AttributionTest, HintBoardNamesTheCallsRequestAtItsFirstWrite) {
  on_thread([] {
    Transaction* a = request(809, "/a");
    Transaction* b = request(810, "/b");
    ASSERT_TRUE(a && b);
    alignas(8) static char board[hint::board::kHeader + 1024 * 8];
    memset(board, 0, sizeof board);
    snprintf(board, hint::board::kHeader, "B1024");
    hint::Message m;
    ASSERT_TRUE(hint::parse(board, sizeof board, &m));
    ASSERT_TRUE(hint::apply(m, board, sizeof board));
    EXPECT_STREQ(board, "OK");
    int32_t* slot = reinterpret_cast<int32_t*>(board + hint::board::kHeader) + 2 * 853;
    StepRef c = sock::on_connect_begin(853, "10.0.0.9", 80);
    sock::on_connect_end(853, c, 0, 0, 4003);
    auto call = [](const char* path) {
      std::string req = std::string("GET ") + path + " HTTP/1.1\r\nHost: up\r\n\r\n";
      iovec v{req.data(), req.size()};
      ssize_t r = 0;
      auto write_all = [](int, const iovec* iov, int cnt, void*) -> ssize_t {
        ssize_t n = 0;
        for (int i = 0; i < cnt; ++i) n += ssize_t(iov[i].iov_len);
        return n;
      };
      if (!http_out::write_through(fds::peek(853), 853, &v, 1, write_all, nullptr, &r)) sock::on_write(853, req.data(), req.size());
      static const char resp[] = "HTTP/1.1 204 No Content\r\n\r\n";
      sock::on_read(853, resp, sizeof resp - 1);
    };
    slot[0] = 810, slot[1] = 1;  // the first request on connection 810: /b
    call("/up-b");
    EXPECT_EQ(slot[0], 0);
    EXPECT_EQ(slot[1], 0);
    call("/up-none");            // nothing named: nobody's (the thread gives hints, so no guessing)
    slot[0] = 810, slot[1] = 2;  // the second request on 810, not the one in flight: nobody's
    call("/up-stale");
    slot[0] = -1, slot[1] = -1;  // a call outside any request
    call("/up-outside");
    slot[0] = 809, slot[1] = 1;  // named, then the socket closes before a byte is written
    sock::on_close(853, 0);
    EXPECT_EQ(slot[1], 0);
    ASSERT_TRUE(hint::parse("U", 1, &m));
    EXPECT_TRUE(hint::apply(m, board, sizeof board));
    respond(809);
    respond(810);
  });
  EXPECT_EQ(count(sent("GET /b"), StepKind::HTTP_CALL), 1);
  EXPECT_EQ(count(sent("GET /a"), StepKind::HTTP_CALL), 0);
  Transaction* c = unattr::container();
  std::lock_guard<std::mutex> l(c->mu);
  EXPECT_GE(count(c, StepKind::HTTP_CALL), 3);
}

TEST_F(AttributionTest, CaptureAttachOnAnotherThreadAndReleaseAfterEnd) {
  uint64_t h = 0;
  on_thread([&] {
    Transaction* a = request(809, "/a");
    ASSERT_NE(a, nullptr);
    h = attr::capture(a);
    ASSERT_NE(h, 0u);
  });
  on_thread([&] {
    EXPECT_TRUE(attr::attach(h));
    EXPECT_EQ(rec::current_request()->name, "GET /a");
    sql_step();
    respond(809);  // the worker writes the response: /a ends, but the capture still holds it
    attr::detach();
    EXPECT_FALSE(attr::attach(h + (1ull << 32)));  // a made-up handle attaches nothing
  });
  EXPECT_EQ(sent("GET /a"), nullptr);
  attr::release(h);
  attr::release(h);  // a second release is harmless
  ASSERT_NE(sent("GET /a"), nullptr);
  EXPECT_EQ(count(sent("GET /a"), StepKind::SQL), 1);
}

TEST_F(AttributionTest, ContainerRotatesIntoAnUnattributedTransaction) {
  on_thread([] { sql_step(); });
  unattr::rotate(false);
  const Transaction* u = nullptr;
  for (auto& t : Collected::txs)
    if (t->kind == "unattributed") u = t.get();
  ASSERT_NE(u, nullptr);
  EXPECT_GE(count(u, StepKind::SQL), 1);
  EXPECT_EQ(u->steps.front().kind, StepKind::START);
  EXPECT_EQ(u->steps.back().kind, StepKind::END);
  size_t before = Collected::txs.size();
  unattr::rotate(false);  // nothing new: nothing sent
  EXPECT_EQ(Collected::txs.size(), before);
}

TEST_F(AttributionTest, AFullContainerIsSentRatherThanFolded) {
  unattr::rotate(false);  // start empty
  size_t before = Collected::txs.size();
  const int steps = int(unattr::container()->max_rows) * 5 / 2;  // 2.5 containers
  on_thread([&] {
    for (int i = 0; i < steps; ++i) sql_step();
  });
  unattr::rotate(false);
  int sql = 0, summarized = 0, containers = 0;
  for (size_t i = before; i < Collected::txs.size(); ++i) {
    const Transaction& t = *Collected::txs[i];
    if (t.kind != "unattributed") continue;
    ++containers;
    sql += count(&t, StepKind::SQL);
    for (const StepSummary& x : t.summary) summarized += int(x.count);
  }
  EXPECT_GE(containers, 3);
  EXPECT_EQ(sql, steps);  // every step kept as a row of its own
  EXPECT_EQ(summarized, 0);
}

}  // namespace
