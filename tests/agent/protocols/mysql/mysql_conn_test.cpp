// The MySQL/MariaDB client-side tracker with the agent's real core: captured connections of real drivers
// (PyMySQL, mysql2, PHP mysqlnd through PDO and mysqli, MariaDB Connector/J) give the rows libmariadb's
// hooks would give, whatever the reads and writes cut, and hostile streams stop being followed, counted,
// with the program's bytes untouched.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/recorder.h"
#include "mysql_test_util.h"
#include "protocols/mysql/mysql_client.h"
#include "protocols/sql/sql_config.h"
#include "support/test_support.h"

using namespace txray;
using namespace txray::mysql;
using namespace txray::mysql::test;

namespace {

class MysqlConnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    txray::test::Collected::install();
    g_tx_calls = 0;
  }
  void TearDown() override {
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
    g_tx = nullptr;
  }

  // The rows a transaction gets when the whole connection is fed as `chunks` (and then ends).
  std::vector<std::string> replay(const std::vector<Chunk>& chunks, std::string_view end_why = {},
                                  bool* stopped = nullptr) {
    Transaction* t = tx::begin("test", "api");
    tx::make_current(t);
    g_tx = t;
    FdSlot slot;
    WireEnv env{.slot = &slot, .peer = "127.0.0.1:3306", .owner = nullptr};
    {
      Conn c(env, test_tx);
      feed(c, chunks, &slot);
      if (stopped) *stopped = c.stopped();
      c.on_end(end_why);
    }
    tx::end(t, 200, "");
    g_tx = nullptr;
    return lines(*txray::test::Collected::txs.back());
  }

  // The capture, whole and cut at every byte of every chunk, and a byte at a time: the same rows.
  void expect_every_split(const std::string& name, const std::vector<std::string>& want) {
    std::vector<Chunk> cap = load_capture(name);
    ASSERT_FALSE(cap.empty()) << name;
    ASSERT_EQ(replay(cap), want) << name << " as captured";
    ASSERT_EQ(replay(pieces(cap, 1)), want) << name << " a byte at a time";
    ASSERT_EQ(replay(pieces(cap, 3)), want) << name << " 3 bytes at a time";
    for (size_t i = 0; i < cap.size(); ++i)
      for (size_t k = 1; k < cap[i].bytes.size(); ++k) ASSERT_EQ(replay(split(cap, i, k)), want) << name << " chunk " << i << " cut at " << k;
  }

  static bool masked() {
    unsetenv("TXRAY_SQL");
    return sql::settings().mode == sql::TextMode::mask;
  }
};

const std::string kConnect =
    "DB_CONNECT mysql://root@127.0.0.1:3306/txray database=txray host=127.0.0.1 port=3306 user=root "
    "db.system=mariadb server_version=5.5.5-10.11.19-MariaDB-0+deb12u1";

TEST_F(MysqlConnTest, PyMysqlTextQueriesMultiStatementsInitDbPing) {
  if (!masked()) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  expect_every_split("pymysql", {
      kConnect,
      "SQL SET AUTOCOMMIT = ? changes=0",
      "SQL select id, name from users where id = ? rows=1",
      "SQL update users set score = score + ? where id = ? changes=1",
      "SQL select * from missing_table status=1146 error=ERROR 1146 (42S02): Table ? doesn't exist sqlstate=42S02",
      // Three statements in one COM_QUERY: one row, the rows of both result sets and the update's change.
      "SQL select ?; select id from users; update users set score=? where id=? rows=4 changes=1",
      "SQL USE mysql",
  });
}

TEST_F(MysqlConnTest, Mysql2QueryAndExecuteWithoutDeprecateEof) {
  if (!masked()) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  expect_every_split("mysql2", {
      kConnect,
      "SQL select id, name from users where id = ? rows=1",
      "SQL PREPARE select id, name, score, born from users where id = ? and name <> ?",
      "SQL select id, name, score, born from users where id = ? and name <> ? binds=[real, text] rows=1",
      "SQL select id, name, score, born from users where id = ? and name <> ? binds=[real, text] rows=1",
      "SQL PREPARE select * from missing_table where id = ? status=1146 error=ERROR 1146 (42S02): Table ? "
      "doesn't exist sqlstate=42S02",
  });
}

TEST_F(MysqlConnTest, PdoEmulatedPrepares) {
  if (!masked()) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  expect_every_split("pdo_emulated", {
      kConnect,
      "SQL select id, name, score, born from users where id = ? rows=1",
      "SQL update users set name = ? where id = ? changes=1",
      "SQL select * from missing_table status=1146 error=ERROR 1146 (42S02): Table ? doesn't exist sqlstate=42S02",
  });
}

TEST_F(MysqlConnTest, PdoNativePreparesTypesRememberedAndClose) {
  if (!masked()) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  expect_every_split("pdo_native", {
      kConnect,
      "SQL PREPARE select id, name, score, born from users where id = ?",
      "SQL select id, name, score, born from users where id = ? binds=[text] rows=1",
      "SQL PREPARE update users set name = ? where id = ?",
      "SQL update users set name = ? where id = ? binds=[text, text] changes=0",
      "SQL PREPARE select * from missing_table status=1146 error=ERROR 1146 (42S02): Table ? doesn't exist "
      "sqlstate=42S02",
  });
}

TEST_F(MysqlConnTest, ConnectorJTextPipelinedAtConnect) {
  if (!masked()) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  std::vector<std::string> got = replay(load_capture("jdbc_text"));
  ASSERT_GE(got.size(), 4u);
  EXPECT_EQ(got[0], kConnect);
  expect_every_split("jdbc_text", got);
}

TEST_F(MysqlConnTest, ConnectorJServerPreparesDeprecateEofNullBind) {
  if (!masked()) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  std::vector<std::string> got = replay(load_capture("jdbc_prepared"));
  expect_every_split("jdbc_prepared", got);
  // Under CLIENT_DEPRECATE_EOF (OK packets end result sets) and with two commands written before the
  // first answer.
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0], kConnect);
  EXPECT_EQ(got[1].rfind("SQL set autocommit=?, sql_mode = concat(@@sql_mode,?)", 0), 0u) << got[1];
  EXPECT_NE(got[1].find(" changes=0"), std::string::npos) << got[1];
  EXPECT_EQ(got[2].rfind("SQL SELECT @@max_allowed_packet,@@system_time_zone,@@time_zone,@@auto_increment_increment", 0), 0u);
  EXPECT_NE(got[2].find(" rows=1"), std::string::npos) << got[2];
  EXPECT_EQ(got[3], "SQL PREPARE select id, name, score, born from users where id = ? and name <> ?");
  EXPECT_EQ(got[4], "SQL select id, name, score, born from users where id = ? and name <> ? binds=[int, text] rows=1");
  EXPECT_EQ(got[5], "SQL select id, name, score, born from users where id = ? and name <> ? binds=[int, text] rows=1");
  EXPECT_EQ(got[6], "SQL PREPARE insert into users(id, name) values (?, ?)");
  EXPECT_EQ(got[7], "SQL insert into users(id, name) values (?, ?) binds=[int, null] changes=1");
}

TEST_F(MysqlConnTest, MysqliCursorLongDataMultiResultsChangeUserLocalInfile) {
  if (!masked()) GTEST_SKIP() << "TXRAY_SQL was read as another mode in this process";
  expect_every_split("mysqli", {
      kConnect,
      "SQL PREPARE select id, name from users where id < ? order by id",
      // A cursor: the rows of the three COM_STMT_FETCH come to the execute's row when it ends.
      "SQL select id, name from users where id < ? order by id binds=[int] rows=3",
      "SQL PREPARE update users set name = ? where id = ?",
      "SQL update users set name = ? where id = ? binds=[blob, int] changes=1",
      "SQL select ?; update users set score = ? where id = ?; select id from users where id = ? rows=2 changes=1",
      "SQL load data local infile ? into table users fields terminated by ? enclosed by ? (id, name) changes=2",
      "SQL delete from users where id in (?+) changes=2",
  });
}

}  // namespace
