// The outbound dispatch's wire clients: which connections get one (a PostgreSQL startup written first, a
// MySQL greeting read first), which never do (a connection driven inside the libpq/libmariadb hooks: one
// source per statement; a Unix socket speaking anything else), TLS records libssl does not make (counted
// at once), and that the program's bytes reach the kernel unchanged. Driven the way the socket hooks drive http_out, with the agent's real core.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "hooks/hook.h"
#include "protocols/dispatch/http_out.h"

using namespace txray;

namespace {

std::string be32s(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }
std::string cstr(const std::string& s) { return s + std::string(1, '\0'); }
std::string msg(char type, const std::string& body) { return std::string(1, type) + be32s(uint32_t(body.size() + 4)) + body; }
std::string startup() {
  std::string body = be32s(196608) + cstr("user") + cstr("app") + cstr("database") + cstr("shop") + std::string(1, '\0');
  return be32s(uint32_t(body.size() + 4)) + body;
}
// The server's side of a trust login and of one simple query returning one row.
const std::string kLogin = msg('R', be32s(0)) + msg('Z', "I");
std::string answer(const std::string& tag) {
  return msg('T', std::string("\0\x01", 2) + cstr("v") + std::string(18, '\0')) +
         msg('D', std::string("\0\x01", 2) + be32s(1) + "x") + msg('C', cstr(tag)) + msg('Z', "I");
}
// A MySQL 5.x/MariaDB greeting (HandshakeV10), sequence 0.
std::string greeting() {
  std::string p = std::string(1, '\x0a') + cstr("10.11.6-MariaDB") + std::string("\x01\0\0\0", 4) + "abcdefgh" +
                  std::string(1, '\0') + std::string("\xfe\xf7", 2) + std::string(1, '\x2d') +
                  std::string("\x02\0", 2) + std::string("\xff\x81", 2) + std::string(1, '\x15') +
                  std::string(10, '\0') + cstr("ijklmnopqrst") + cstr("mysql_native_password");
  return std::string{char(p.size()), char(p.size() >> 8), char(p.size() >> 16), '\0'} + p;
}

std::vector<std::unique_ptr<Transaction>> g_done;
void keep(Transaction* t) { g_done.emplace_back(t); }

class WireDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_done.clear();
    tx::set_sink(keep);
    slot = std::make_unique<FdSlot>();
    slot->kind.store(FdKind::outbound);
  }
  void TearDown() override {
    tx::set_sink(nullptr);
    hooks::t_in_family = 0;
  }
  void connect(bool unix_socket = false) {
    slot->quiet = unix_socket;
    if (unix_socket) http_out::on_connect(slot.get(), "/run/postgresql/.s.PGSQL.5432", -1);
    else http_out::on_connect(slot.get(), "127.0.0.1", 5432);
  }
  // One write of the program, as socket_hooks.cpp makes it: through write_through, else the plain call.
  void write(const std::string& b) {
    iovec v{const_cast<char*>(b.data()), b.size()};
    ssize_t r;
    if (http_out::has_client(slot.get()) &&
        http_out::write_through(slot.get(), 5, &v, 1, [](int, const iovec* iov, int cnt, void*) -> ssize_t {
          ssize_t n = 0;
          for (int i = 0; i < cnt; ++i) wire.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len), n += ssize_t(iov[i].iov_len);
          return n;
        }, nullptr, &r))
      return;
    wire += b;
    slot->add_written(b.size());
    if (http_out::has_client(slot.get())) http_out::on_sent(slot.get(), b.data(), b.size());
  }
  void read(const std::string& b) {
    slot->add_read(b.size());
    if (http_out::has_client(slot.get())) http_out::on_received(slot.get(), b.data(), b.size());
  }
  std::vector<std::string> rows(StepKind kind) {
    std::vector<std::string> out;
    for (const auto& t : g_done)
      for (const Step& s : t->steps)
        if (s.kind == kind) out.emplace_back(s.text.view());
    return out;
  }

  static inline std::string wire;
  std::unique_ptr<FdSlot> slot;
};

}  // namespace

TEST_F(WireDispatchTest, APostgresStartupWrittenFirstMakesRowsAndTheBytesGoOutUnchanged) {
  wire.clear();
  Transaction* t = tx::begin("GET /a", "api");
  tx::make_current(t);
  connect();
  std::string out = startup() + msg('Q', cstr("select v from t where id = 42"));
  write(startup());
  read(kLogin);
  write(msg('Q', cstr("select v from t where id = 42")));
  read(answer("SELECT 1"));
  tx::end(t, 200, "");
  EXPECT_EQ(wire, out);
  EXPECT_EQ(rows(StepKind::DB_CONNECT).size(), 1u);
  EXPECT_EQ(rows(StepKind::SQL), std::vector<std::string>{"select v from t where id = ?"});
}

TEST_F(WireDispatchTest, AConnectionDrivenInsideTheLibpqHooksGetsNoWireRows) {
  wire.clear();
  Transaction* t = tx::begin("GET /a", "api");
  tx::make_current(t);
  connect();
  hooks::t_in_family |= 1u << static_cast<unsigned>(HookFamily::sql);  // PQconnectdb / PQexec run
  write(startup());
  read(kLogin);
  write(msg('Q', cstr("select 1")));
  read(answer("SELECT 1"));
  hooks::t_in_family = 0;
  EXPECT_FALSE(http_out::has_client(slot.get()));  // let go: later bytes cost nothing more
  tx::end(t, 200, "");
  EXPECT_TRUE(rows(StepKind::DB_CONNECT).empty());
  EXPECT_TRUE(rows(StepKind::SQL).empty());
}

TEST_F(WireDispatchTest, ALibraryTakingOverAWireConnectionEndsTheWireClient) {
  // libpq's PQconnectStart/PQconnectPoll (not hooked) write the startup; PQsendQuery (hooked) the query.
  wire.clear();
  Transaction* t = tx::begin("GET /a", "api");
  tx::make_current(t);
  connect();
  write(startup());
  read(kLogin);
  hooks::t_in_family |= 1u << static_cast<unsigned>(HookFamily::sql);
  write(msg('Q', cstr("select 1")));
  hooks::t_in_family = 0;
  read(answer("SELECT 1"));
  tx::end(t, 200, "");
  EXPECT_EQ(rows(StepKind::DB_CONNECT).size(), 1u);
  EXPECT_TRUE(rows(StepKind::SQL).empty());  // the library hook's row is the statement's only one
}

TEST_F(WireDispatchTest, AMysqlGreetingReadFirstMakesAWireClient) {
  wire.clear();
  Transaction* t = tx::begin("GET /a", "api");
  tx::make_current(t);
  connect();
  read(greeting());
  // HandshakeResponse41: PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | CONNECT_WITH_DB, then the OK.
  std::string r = std::string("\x08\x82\x08\x00", 4) + be32s(0x01000000) + std::string(1, '\x2d') + std::string(23, '\0') +
                  cstr("app") + std::string(1, '\x14') + std::string(20, 'p') + cstr("shop") + cstr("mysql_native_password");
  write(std::string{char(r.size()), char(r.size() >> 8), char(r.size() >> 16), '\x01'} + r);
  read(std::string("\x07\0\0\x02\0\0\0\x02\0\0\0", 11));
  EXPECT_TRUE(http_out::has_client(slot.get()));  // a non-HTTP write: without the wire client, let go
  tx::end(t, 200, "");
  ASSERT_EQ(rows(StepKind::DB_CONNECT).size(), 1u);
  EXPECT_NE(rows(StepKind::DB_CONNECT)[0].find("shop"), std::string::npos);
}

TEST_F(WireDispatchTest, AUnixSocketSpeakingAnythingElseIsLetGo) {
  wire.clear();
  connect(true);
  write("<14>Dec  2 08:00:00 app: hello\n");  // syslog, say
  EXPECT_FALSE(http_out::has_client(slot.get()));
  EXPECT_EQ(slot->kind.load(), FdKind::none);  // not followed at all any more: no SOCKET_CLOSE row either
}

TEST_F(WireDispatchTest, AUnixSocketServerThatSpeaksFirstAndIsNotMysqlIsLetGo) {
  wire.clear();
  connect(true);
  read("220 mail.example ESMTP\r\n");
  EXPECT_EQ(slot->kind.load(), FdKind::none);
}

TEST_F(WireDispatchTest, AUnixSocketToPostgresIsFollowed) {
  wire.clear();
  Transaction* t = tx::begin("GET /a", "api");
  tx::make_current(t);
  connect(true);
  write(startup());
  read(kLogin);
  write(msg('Q', cstr("select 2")));
  read(answer("SELECT 1"));
  EXPECT_EQ(slot->kind.load(), FdKind::outbound);
  tx::end(t, 200, "");
  EXPECT_EQ(rows(StepKind::SQL), std::vector<std::string>{"select ?"});
  ASSERT_EQ(rows(StepKind::DB_CONNECT).size(), 1u);
  EXPECT_NE(rows(StepKind::DB_CONNECT)[0].find("/run/postgresql/.s.PGSQL.5432"), std::string::npos);
}

// SSLRequest answered 'S', then TLS records: libssl's own I/O runs inside the OpenSSL hooks (the tls
// family held), so the plaintext will come through them; records passing the socket outside them are TLS
// the agent cannot read, counted once at once, and the socket is let go.
TEST_F(WireDispatchTest, TlsRecordsOutsideLibsslCountTheConnectionOnceAndLetItGo) {
  wire.clear();
  Transaction* t = tx::begin("GET /a", "api");
  tx::make_current(t);
  connect();
  uint64_t before = counters().streams_unparsed.load();
  std::string hello("\x16\x03\x01\x00\x05hello", 10);  // the head of a ClientHello record, say
  write(be32s(8) + be32s(80877103));                   // SSLRequest
  read("S");
  write(hello);
  EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
  EXPECT_FALSE(http_out::has_client(slot.get()));
  read(std::string("\x16\x03\x03\x00\x05world", 10));
  tx::end(t, 200, "");
  EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
  EXPECT_EQ(wire, be32s(8) + be32s(80877103) + hello);
  EXPECT_TRUE(rows(StepKind::SQL).empty());
}

TEST_F(WireDispatchTest, TlsRecordsInsideLibsslKeepTheWireClientWaitingForThePlaintext) {
  wire.clear();
  Transaction* t = tx::begin("GET /a", "api");
  tx::make_current(t);
  connect();
  uint64_t before = counters().streams_unparsed.load();
  write(be32s(8) + be32s(80877103));
  read("S");
  hooks::t_in_family |= 1u << static_cast<unsigned>(HookFamily::tls);  // SSL_do_handshake runs
  write(std::string("\x16\x03\x01\x00\x05hello", 10));
  read(std::string("\x16\x03\x03\x00\x05world", 10));
  hooks::t_in_family = 0;
  EXPECT_TRUE(http_out::has_client(slot.get()));
  EXPECT_EQ(counters().streams_unparsed.load(), before);
  tx::end(t, 200, "");
}
