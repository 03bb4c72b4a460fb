// What is not a plain conversation: TLS, compression, refused logins, pipelines past the bound, statements
// past the map's bound, garbage, a connection that ends mid-reply, and TXRAY_SQL=raw. Built on the real
// handshake of a PyMySQL capture, with packets made here where no driver sends them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/recorder.h"
#include "mysql_test_util.h"
#include "protocols/sql/sql_config.h"
#include "support/test_support.h"

using namespace txray;
using namespace txray::mysql;
using namespace txray::mysql::test;

namespace {

std::string pkt(uint8_t seq, std::string_view payload) {
  std::string h(4, '\0');
  h[0] = char(payload.size() & 0xff);
  h[1] = char((payload.size() >> 8) & 0xff);
  h[2] = char((payload.size() >> 16) & 0xff);
  h[3] = char(seq);
  return h.append(payload);
}

const std::string kOk("\x00\x00\x00\x02\x00\x00\x00", 7);
const std::string kEof("\xfe\x00\x00\x02\x00", 5);

class MysqlHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    txray::test::Collected::install();
    unsetenv("TXRAY_SQL");
    counters().streams_unparsed = 0;
    cap = load_capture("pymysql");
    ASSERT_GE(cap.size(), 3u);
    greeting = cap[0].bytes;
    response = cap[1].bytes;
    auth_ok = cap[2].bytes;
    t = tx::begin("test", "api");
    tx::make_current(t);
    g_tx = t;
    conn = std::make_unique<Conn>(WireEnv{.slot = &slot, .peer = "10.0.0.7:3307", .owner = nullptr}, test_tx);
  }
  void TearDown() override {
    conn.reset();
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
    g_tx = nullptr;
  }
  void sent(const std::string& b) {
    slot.bytes_written.store(slot.bytes_written.load() + b.size());
    conn->on_sent(b.data(), b.size());
  }
  void received(const std::string& b) {
    slot.bytes_read.store(slot.bytes_read.load() + b.size());
    conn->on_received(b.data(), b.size());
  }
  void handshake() {
    received(greeting);
    sent(response);
    received(auth_ok);
  }
  Transaction& finish() {
    conn->on_end({});
    tx::end(t, 200, "");
    g_tx = nullptr;
    return *txray::test::Collected::txs.back();
  }
  std::vector<std::string> rows() { return lines(finish()); }

  std::vector<Chunk> cap;
  std::string greeting, response, auth_ok;
  FdSlot slot;
  Transaction* t = nullptr;
  std::unique_ptr<Conn> conn;
};

const std::string kConnect =
    "DB_CONNECT mysql://root@10.0.0.7:3307/txray database=txray host=10.0.0.7 port=3307 user=root "
    "db.system=mariadb server_version=5.5.5-10.11.19-MariaDB-0+deb12u1";

TEST_F(MysqlHostileTest, ReplyOutOfSequenceStopsOnceAndClosesTheOpenRow) {
  handshake();
  sent(pkt(0, "\x03select 1"));
  received(pkt(5, "\x01"));  // a column count, but sequence 5 where 1 was due
  EXPECT_TRUE(conn->stopped());
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  // The dispatch feeds nothing more; if it did, nothing would change.
  received(pkt(2, kEof));
  sent(pkt(0, "\x03select 2"));
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  EXPECT_EQ(rows(), (std::vector<std::string>{kConnect, "SQL select ? error=wire protocol not followed"}));
  EXPECT_EQ(t->error.empty(), false);
}

TEST_F(MysqlHostileTest, UnknownCommandStops) {
  handshake();
  sent(pkt(0, std::string("\x04users\0", 7)));  // COM_FIELD_LIST
  EXPECT_TRUE(conn->stopped());
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  EXPECT_EQ(rows(), std::vector<std::string>{kConnect});
}

TEST_F(MysqlHostileTest, ClientSpeakingFirstIsNotFollowed) {
  sent(pkt(0, "\x03select 1"));
  EXPECT_TRUE(conn->stopped());
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  EXPECT_TRUE(rows().empty());
}

TEST_F(MysqlHostileTest, CompressionNegotiatedStopsAfterTheConnectRow) {
  std::string r = response;
  r[4] = char(static_cast<unsigned char>(r[4]) | 0x20);  // CLIENT_COMPRESS (the server offers it)
  received(greeting);
  sent(r);
  received(auth_ok);
  EXPECT_TRUE(conn->stopped());
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  EXPECT_EQ(rows(), std::vector<std::string>{kConnect});  // the connect row is whole, no error
}

TEST_F(MysqlHostileTest, SslRequestThenThePlaintextHandshake) {
  std::string g = greeting;
  g[4 + 1 + 33 + 4 + 8 + 1 + 1] |= 0x08;  // the server offers CLIENT_SSL (0x0800, in the caps' second byte)
  received(g);
  std::string ssl = response.substr(4, 32);
  ssl[1] = char(static_cast<unsigned char>(ssl[1]) | 0x08);
  sent(pkt(1, ssl));
  EXPECT_TRUE(conn->tls_started());
  EXPECT_FALSE(conn->stopped());
  // What the OpenSSL hooks then see: the full response (sequence 2), the OK (3), a query.
  std::string full = response.substr(4);
  full[1] = char(static_cast<unsigned char>(full[1]) | 0x08);
  sent(pkt(2, full));
  received(pkt(3, kOk));
  sent(pkt(0, "\x03select 1"));
  received(pkt(1, kOk));
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(rows(), (std::vector<std::string>{kConnect, "SQL select ? changes=0"}));
}

TEST_F(MysqlHostileTest, RefusedLoginFailsTheConnectRow) {
  received(greeting);
  sent(response);
  received(pkt(2, "\xff\x15\x04#28000Access denied for user 'root'@'10.0.0.1' (using password: NO)"));
  EXPECT_FALSE(conn->stopped());
  Transaction& done = finish();
  std::vector<std::string> got = lines(done);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rfind("DB_CONNECT mysql://root@10.0.0.7:3307/txray status=1045 error=ERROR 1045 (28000): "
                         "Access denied for user ? (using password: NO) database=txray", 0), 0u) << got[0];
  EXPECT_NE(got[0].find(" sqlstate=28000"), std::string::npos);
  EXPECT_FALSE(done.error.empty());
}

TEST_F(MysqlHostileTest, AuthSwitchAndMoreDataRoundsUntilOk) {
  received(greeting);
  sent(response);
  received(pkt(2, std::string("\xfe" "caching_sha2_password\0" "01234567890123456789\0", 43)));
  sent(pkt(3, std::string(32, 'h')));
  received(pkt(4, "\x01\x04"));  // full authentication: the client sends more
  sent(pkt(5, "secret-never-kept"));
  received(pkt(6, kOk));
  sent(pkt(0, "\x03select 1"));
  received(pkt(1, kOk));
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(rows(), (std::vector<std::string>{kConnect, "SQL select ? changes=0"}));
}

TEST_F(MysqlHostileTest, NoTransactionNoRowsAndOneAttributionPerStatement) {
  g_tx = nullptr;  // statement_tx: record nothing (a request that is over, a pool's health check)
  for (const Chunk& c : load_capture("mysql2")) (c.client ? sent(c.bytes) : received(c.bytes));
  EXPECT_FALSE(conn->stopped());
  // The connect, the query, two prepares and two executes asked once each; the ping-free quit not at all.
  EXPECT_EQ(g_tx_calls, 6);
  EXPECT_TRUE(rows().empty());
}

TEST_F(MysqlHostileTest, RowBytesAreTheStatementsOwn) {
  std::vector<Chunk> c = load_capture("pdo_native");
  for (const Chunk& ch : c) (ch.client ? sent(ch.bytes) : received(ch.bytes));
  Transaction& done = finish();
  std::vector<const Step*> sql;
  for (const Step& s : done.steps)
    if (s.kind == StepKind::SQL) sql.push_back(&s);
  ASSERT_EQ(sql.size(), 5u);
  // The first execute: its 16-byte COM_STMT_EXECUTE, and the result set (count, 4 columns, EOF, 1 row, EOF).
  EXPECT_EQ(sql[1]->bytes_written, 4u + 16);
  EXPECT_EQ(sql[1]->bytes_read, (4u + 1) + (4 + 41) + (4 + 45) + (4 + 47) + (4 + 45) + (4 + 5) + (4 + 20) + (4 + 5));
}

TEST_F(MysqlHostileTest, ConnectionEndingMidReplyClosesTheRowWithWhy) {
  handshake();
  sent(pkt(0, "\x03select * from big"));
  received(pkt(1, "\x01") + pkt(2, "column") + pkt(3, kEof) + pkt(4, "\x01" "a"));
  conn->on_end("connection closed");
  tx::end(t, 200, "");
  g_tx = nullptr;
  EXPECT_EQ(lines(*txray::test::Collected::txs.back()),
            (std::vector<std::string>{kConnect, "SQL select * from big rows=1 error=connection closed"}));
}

TEST_F(MysqlHostileTest, ServerErrorNobodyAskedForIsNotAStop) {
  handshake();
  received(pkt(0, "\xff\x87\x0f#HY000The client was disconnected by the server because of inactivity"));
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(rows(), std::vector<std::string>{kConnect});
}

TEST_F(MysqlHostileTest, ResultSetsAreCountedNotBuffered) {
  handshake();
  sent(pkt(0, "\x03select n from numbers"));
  std::string reply = pkt(1, "\x01") + pkt(2, "column") + pkt(3, kEof);
  uint8_t seq = 4;
  const int kRows = 20000;
  std::string rowpk;
  for (int i = 0; i < kRows; ++i) {
    std::string v = std::to_string(i);
    rowpk += pkt(seq++, std::string(1, char(v.size())) + v);
  }
  rowpk += pkt(seq, kEof);
  received(reply);
  for (size_t i = 0; i < rowpk.size(); i += 1000) received(rowpk.substr(i, 1000));
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(rows(), (std::vector<std::string>{kConnect, "SQL select n from numbers rows=20000"}));
}

TEST_F(MysqlHostileTest, BigStatementKeepsItsHeadOnly) {
  handshake();
  std::string q = "\x03select '" + std::string(3 << 20, 'x') + "'";
  std::string w = pkt(0, q);
  for (size_t i = 0; i < w.size(); i += 65536) sent(w.substr(i, 65536));
  received(pkt(1, "\x01") + pkt(2, "c") + pkt(3, kEof) + pkt(4, std::string("\x01y", 2)) + pkt(5, kEof));
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(rows(), (std::vector<std::string>{kConnect, "SQL select ? rows=1"}));
}

TEST_F(MysqlHostileTest, PipelineBeyondTheBoundStops) {
  handshake();
  for (size_t i = 0; i < Conn::kMaxPipelined; ++i) sent(pkt(0, "\x0e"));  // COM_PING, unanswered
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(conn->pipelined(), Conn::kMaxPipelined);
  sent(pkt(0, "\x03select 1"));
  EXPECT_TRUE(conn->stopped());
  EXPECT_EQ(rows(), (std::vector<std::string>{kConnect, "SQL select ? error=wire protocol not followed"}));
}

TEST_F(MysqlHostileTest, PreparedStatementsBoundedOldestEvictedCounted) {
  handshake();
  const uint32_t n = Conn::kMaxStatements + 1;
  for (uint32_t id = 1; id <= n; ++id) {
    sent(pkt(0, "\x16select " + std::to_string(id)));
    std::string ok("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 12);
    for (int k = 0; k < 4; ++k) ok[1 + k] = char((id >> (8 * k)) & 0xff);
    received(pkt(1, ok));
  }
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(conn->statements(), Conn::kMaxStatements);
  EXPECT_EQ(conn->evicted(), 1u);
}

TEST_F(MysqlHostileTest, ExecuteOfAStatementNeverSeen) {
  handshake();
  sent(pkt(0, std::string("\x17\x63\x00\x00\x00\x00\x01\x00\x00\x00", 10)));
  received(pkt(1, kOk));
  EXPECT_FALSE(conn->stopped());
  EXPECT_EQ(rows(), (std::vector<std::string>{kConnect, "SQL EXECUTE (statement not seen) changes=0"}));
}

TEST_F(MysqlHostileTest, RawModeShowsEachExecutionsOwnValues) {
  setenv("TXRAY_SQL", "raw", 1);
  if (sql::settings().mode != sql::TextMode::raw) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  for (const Chunk& c : load_capture("mysql2")) (c.client ? sent(c.bytes) : received(c.bytes));
  std::vector<std::string> got = rows();
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[1], "SQL select id, name from users where id = 2 rows=1");
  EXPECT_EQ(got[3], "SQL select id, name, score, born from users where id = ? and name <> ? binds=[1, 'x'] rows=1");
  EXPECT_EQ(got[4], "SQL select id, name, score, born from users where id = ? and name <> ? binds=[3, 'y'] rows=1");
}

TEST_F(MysqlHostileTest, RawModeNullsLongDataAndDates) {
  setenv("TXRAY_SQL", "raw", 1);
  if (sql::settings().mode != sql::TextMode::raw) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  handshake();
  sent(pkt(0, "\x16insert into t values (?, ?, ?, ?)"));
  received(pkt(1, std::string("\x00\x09\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00", 12)) + pkt(2, "p") + pkt(3, "p") +
           pkt(4, "p") + pkt(5, "p") + pkt(6, kEof));
  sent(pkt(0, std::string("\x18\x09\x00\x00\x00\x02\x00" "abc", 10)));  // long data for the third
  // NULL, -5 (TINY), long data, DATETIME 2024-01-02 03:04:05.
  std::string exec("\x17\x09\x00\x00\x00\x00\x01\x00\x00\x00" "\x01" "\x01" "\x06\x00\x01\x00\xfc\x00\x0c\x00"
                   "\xfb" "\x07\xe8\x07\x01\x02\x03\x04\x05", 29);
  sent(pkt(0, exec));
  received(pkt(1, std::string("\x00\x01\x00\x02\x00\x00\x00", 7)));
  std::vector<std::string> got = rows();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2], "SQL insert into t values (?, ?, ?, ?) binds=[NULL, -5, long data, datetime(2024-01-02 03:04:05)] "
                    "changes=1");
}

}  // namespace
