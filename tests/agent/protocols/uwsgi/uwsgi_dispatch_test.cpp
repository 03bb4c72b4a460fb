// The outbound dispatch gives a connection whose first write is a uwsgi packet the uwsgi client, over TCP
// and over a Unix socket (nginx's `uwsgi_pass unix:…`), driven the way the socket hooks drive http_out:
// through write_through with a kernel of its own, reads, the server's end of the stream, the close.
// The kernel gets the packet with the context's vars, the program is told its own byte counts, and the
// call row is closed by the end of an answer without a length.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "protocols/dispatch/http_out.h"
#include "protocols/uwsgi/uwsgi_client.h"
#include "uwsgi_bytes.h"

using namespace txray;
using namespace txray::test::uwsgi_bytes;

namespace {

std::vector<std::unique_ptr<Transaction>> g_done;
void keep(Transaction* t) { g_done.emplace_back(t); }

class UwsgiDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_done.clear();
    tx::set_sink(keep);
    uwsgi::set_propagate_for_test(1);
    slot = std::make_unique<FdSlot>();
    slot->kind.store(FdKind::outbound);
    wire.clear();
  }
  void TearDown() override {
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
    uwsgi::set_propagate_for_test(-1);
  }
  void connect(bool unix_socket) {
    slot->quiet = unix_socket;
    if (unix_socket) http_out::on_connect(slot.get(), "/run/uwsgi/app.sock", -1);
    else http_out::on_connect(slot.get(), "127.0.0.1", 3031);
  }
  // One write of the program, as socket_hooks.cpp makes it; returns what the program is told.
  size_t write(const std::string& b) {
    iovec v{const_cast<char*>(b.data()), b.size()};
    ssize_t r;
    if (http_out::has_client(slot.get()) &&
        http_out::write_through(slot.get(), 5, &v, 1, [](int, const iovec* iov, int cnt, void*) -> ssize_t {
          ssize_t n = 0;
          for (int i = 0; i < cnt; ++i) wire.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len), n += ssize_t(iov[i].iov_len);
          return n;
        }, nullptr, &r))
      return size_t(r);
    wire += b;
    slot->add_written(b.size());
    if (http_out::has_client(slot.get())) http_out::on_sent(slot.get(), b.data(), b.size());
    return b.size();
  }
  void read(const std::string& b) {
    slot->add_read(b.size());
    if (http_out::has_client(slot.get())) http_out::on_received(slot.get(), b.data(), b.size());
  }
  std::vector<const Step*> calls() {
    std::vector<const Step*> out;
    for (const auto& t : g_done)
      for (const Step& s : t->steps)
        if (s.kind == StepKind::HTTP_CALL) out.push_back(&s);
    return out;
  }
  void one_request(bool unix_socket) {
    Transaction* t = tx::begin("GET /front", "http");
    tx::make_current(t);
    connect(unix_socket);
    std::string prog = request("POST", "/app?x=1", "body!");
    EXPECT_EQ(write(prog), prog.size()) << "the program's own count";
    std::string a = answer(200, "streamed", false);
    read(a);
    http_out::on_eof(slot.get());
    http_out::on_close(slot.get(), 5);
    tx::end(t, 200, "");
    ASSERT_GT(wire.size(), prog.size());
    EXPECT_EQ(wire.substr(4 + wire.size() - prog.size()), prog.substr(4)) << "the program's vars after the inserted";
    EXPECT_EQ(wire.substr(4, 18), std::string("\x10\x00HTTP_TRACEPARENT", 18));
    auto rows = calls();
    ASSERT_EQ(rows.size(), 1u);
    std::string peer = unix_socket ? "/run/uwsgi/app.sock" : "127.0.0.1:3031";
    EXPECT_EQ(std::string(rows[0]->text.view()), "uwsgi://" + peer + "/app?x=?");
    EXPECT_EQ(rows[0]->status, 200);
    EXPECT_TRUE(rows[0]->error.empty()) << rows[0]->error;
    EXPECT_EQ(rows[0]->bytes_written, 5u);
    EXPECT_EQ(rows[0]->bytes_read, a.size());
    EXPECT_FALSE(rows[0]->open);
    std::string trace = "00-";
    for (uint8_t c : g_done[0]->trace_id) trace += "0123456789abcdef"[c >> 4], trace += "0123456789abcdef"[c & 15];
    char span[20];
    snprintf(span, sizeof span, "-%016llx-", static_cast<unsigned long long>(rows[0]->id));
    EXPECT_EQ(wire.find(trace + span), 4u + 2 + 16 + 2) << "the front's trace, the row's span";
  }

  static inline std::string wire;
  std::unique_ptr<FdSlot> slot;
};

}  // namespace

TEST_F(UwsgiDispatchTest, APacketWrittenFirstOverTcpMakesACallRow) { one_request(false); }

TEST_F(UwsgiDispatchTest, APacketWrittenFirstOverAUnixSocketMakesACallRow) { one_request(true); }

TEST_F(UwsgiDispatchTest, HttpAndOtherBytesAreNotTakenForUwsgi) {
  Transaction* t = tx::begin("GET /front", "http");
  tx::make_current(t);
  connect(false);
  std::string req = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
  write(req);
  read("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  http_out::on_close(slot.get(), 5);
  connect(true);  // a Unix socket speaking something else: let go, its bytes unchanged
  std::string other = std::string("\0\x10\0\0lowercase-key..", 20);
  write(other);
  http_out::on_close(slot.get(), 5);
  tx::end(t, 200, "");
  auto rows = calls();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::string(rows[0]->text.view()).rfind("http://", 0), 0u);
  EXPECT_EQ(wire.substr(wire.size() - other.size()), other);
}

TEST_F(UwsgiDispatchTest, ABodySentByFileKeepsTheConnectionFollowed) {
  Transaction* t = tx::begin("POST /front", "http");
  tx::make_current(t);
  connect(false);
  uint64_t unparsed = counters().streams_unparsed.load();
  std::string prog = request("POST", "/up", std::string(300000, 'f'));
  std::string head = prog.substr(0, prog.size() - 300000);
  EXPECT_EQ(write(head), head.size());
  slot->add_written(300000);
  http_out::on_sent_opaque(slot.get(), 300000);  // sendfile(2) of the buffered body
  read(answer(200, "ok"));
  http_out::on_close(slot.get(), 5);
  tx::end(t, 200, "");
  auto rows = calls();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]->status, 200);
  EXPECT_TRUE(rows[0]->error.empty()) << rows[0]->error;
  EXPECT_EQ(rows[0]->bytes_written, 300000u);
  EXPECT_EQ(counters().streams_unparsed.load(), unparsed);
}
