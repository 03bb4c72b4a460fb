// Bind parameters as recorded on SQL steps, and the TXRAY_SQL settings.
#include "protocols/sql/sql_binds.h"
#include "protocols/sql/sql_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace txray::sql {
namespace {

TEST(BindList, MaskModeKeepsOnlyTypes) {
  BindList b;
  EXPECT_TRUE(b.empty());
  b.set(1, BindType::integer, "42", TextMode::mask);
  b.set(2, BindType::text, "'secret'", TextMode::mask);
  b.set(3, BindType::null, "NULL", TextMode::mask);
  EXPECT_EQ(b.text(), "int, text, null");
}

TEST(BindList, GapsShowAsUnsetAndTextFollowsChanges) {
  BindList b;
  b.set(3, BindType::real, {}, TextMode::mask);
  EXPECT_EQ(b.text(), "unset, unset, real");
  b.set(1, BindType::blob, {}, TextMode::mask);
  EXPECT_EQ(b.text(), "blob, unset, real");
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.text(), "");
}

TEST(BindList, SharedTextIsReusedUntilTheTextChanges) {
  BindList b;
  b.set(1, BindType::integer, {}, TextMode::mask);
  const char* first = b.shared().view().data();
  EXPECT_EQ(b.shared(), "int");
  b.set(1, BindType::integer, {}, TextMode::mask);  // re-executed with a new value of the same type
  EXPECT_EQ(b.shared().view().data(), first);       // no new text: rows share the old one
  txray::SharedText held = b.shared();              // a row still holds it when the type changes
  b.set(1, BindType::text, {}, TextMode::mask);
  EXPECT_EQ(b.shared(), "text");
  EXPECT_EQ(held, "int");
  b.clear();
  EXPECT_TRUE(b.shared().empty());
}

TEST(BindList, RawModeKeepsValues) {
  BindList b;
  b.set(1, BindType::integer, "42", TextMode::raw);
  b.set(2, BindType::text, quote_value("it's", 64), TextMode::raw);
  EXPECT_EQ(b.text(), "42, 'it''s'");
  b.set(1, BindType::integer, "43", TextMode::raw);  // same type, new value: rebuilt in raw mode
  EXPECT_EQ(b.text(), "43, 'it''s'");
}

TEST(BindList, OffModeRecordsNothing) {
  BindList b;
  b.set(1, BindType::integer, "42", TextMode::off);
  EXPECT_TRUE(b.empty());
}

TEST(BindList, ManyParametersAreCapped) {
  BindList b;
  for (int i = 1; i <= BindList::kMaxRecorded + 10; ++i) b.set(i, BindType::integer, {}, TextMode::mask);
  std::string t = b.text();
  EXPECT_EQ(t.substr(t.size() - 5), ", ...");
  b.set(0, BindType::integer, {}, TextMode::mask);   // SQLite numbers from 1: ignored
  b.set(-3, BindType::integer, {}, TextMode::mask);
  EXPECT_EQ(b.text(), t);
}

// Found by agent.fuzz_sql_binds: a statement bound only past the 64th parameter read ", ..." and kept it
// after sqlite3_clear_bindings (clear() returned early: no slots).
TEST(BindList, OnlyParametersPastTheCapAreListedAndCleared) {
  BindList b;
  b.set(BindList::kMaxRecorded + 5, BindType::text, {}, TextMode::mask);
  EXPECT_EQ(b.text(), "...");
  b.clear();
  EXPECT_EQ(b.text(), "");
  b.set(1, BindType::integer, {}, TextMode::mask);
  EXPECT_EQ(b.text(), "int");
}

TEST(QuoteValue, EscapesAndCuts) {
  EXPECT_EQ(quote_value("a'b", 64), "'a''b'");
  EXPECT_EQ(quote_value(std::string(100, 'x'), 20), "'" + std::string(17, 'x') + "...'");
}

TEST(PgParams, MaskRawBinaryNull) {
  const char* values[] = {"alice", nullptr, "\x01\x02"};
  int lengths[] = {5, 0, 2};
  int formats[] = {0, 0, 1};
  EXPECT_EQ(format_pg_params(3, values, lengths, formats, TextMode::mask, 64), "text, null, binary");
  EXPECT_EQ(format_pg_params(3, values, lengths, formats, TextMode::raw, 64), "'alice', NULL, binary(2)");
  EXPECT_EQ(format_pg_params(3, values, lengths, formats, TextMode::off, 64), "");
  EXPECT_EQ(format_pg_params(1, values, nullptr, nullptr, TextMode::raw, 64), "'alice'");
  EXPECT_EQ(format_pg_params(0, nullptr, nullptr, nullptr, TextMode::mask, 64), "");
}

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* k) {
  auto it = g_env.find(k);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

// MySQL parameters (MYSQL_BIND as mysql_stmt_execute sends it), by their protocol type numbers.
TEST(MysqlParams, KindsInMaskMode) {
  auto kind = [](int type, bool null = false) {
    return std::string(bind_type_name(mysql_bind_type({.type = type, .is_null = null})));
  };
  EXPECT_EQ(kind(1), "int");       // TINY
  EXPECT_EQ(kind(3), "int");       // LONG
  EXPECT_EQ(kind(8), "int");       // LONGLONG
  EXPECT_EQ(kind(5), "real");      // DOUBLE
  EXPECT_EQ(kind(246), "decimal"); // NEWDECIMAL
  EXPECT_EQ(kind(254), "text");    // STRING
  EXPECT_EQ(kind(253), "text");    // VAR_STRING
  EXPECT_EQ(kind(252), "blob");    // BLOB
  EXPECT_EQ(kind(12), "datetime"); // DATETIME
  EXPECT_EQ(kind(6), "null");      // NULL
  EXPECT_EQ(kind(3, true), "null");  // an int whose is_null flag is set
  EXPECT_EQ(kind(99), "value");    // unknown
}

TEST(MysqlParams, ValuesInRawMode) {
  int32_t i = -42;
  uint32_t u = 4000000000u;
  int64_t ll = -9000000000LL;
  int8_t tiny = -3;
  double d = 1.5;
  const char text[] = "it's a secret";
  EXPECT_EQ(mysql_param_raw({.type = 3, .buffer = &i}, 64), "-42");
  EXPECT_EQ(mysql_param_raw({.type = 3, .is_unsigned = true, .buffer = &u}, 64), "4000000000");
  EXPECT_EQ(mysql_param_raw({.type = 8, .buffer = &ll}, 64), "-9000000000");
  EXPECT_EQ(mysql_param_raw({.type = 1, .buffer = &tiny}, 64), "-3");
  EXPECT_EQ(mysql_param_raw({.type = 5, .buffer = &d}, 64), "1.5");
  EXPECT_EQ(mysql_param_raw({.type = 254, .buffer = text, .length = 4}, 64), "'it''s'");
  EXPECT_EQ(mysql_param_raw({.type = 254, .buffer = text, .length = sizeof text - 1}, 8), "'it''s ...'");
  EXPECT_EQ(mysql_param_raw({.type = 252, .buffer = text, .length = 13}, 64), "blob(13)");
  EXPECT_EQ(mysql_param_raw({.type = 3, .is_null = true, .buffer = &i}, 64), "NULL");
  EXPECT_EQ(mysql_param_raw({.type = 3, .buffer = nullptr}, 64), "NULL");
  struct {
    unsigned int year, month, day, hour, minute, second;
    unsigned long second_part;
    bool neg;
    int time_type;
  } t{2024, 1, 2, 3, 4, 5, 0, false, 1};
  EXPECT_EQ(mysql_param_raw({.type = 12, .buffer = &t}, 64), "datetime(2024-01-02 03:04:05)");
}

TEST(Settings, DefaultsAndValues) {
  g_env = {};
  Settings d = parse_settings(fake_getenv);
  EXPECT_EQ(d.mode, TextMode::mask);
  EXPECT_EQ(d.max_text, kDefaultMaxText);
  EXPECT_TRUE(d.problems.empty());
  g_env = {{"TXRAY_SQL", "raw"}, {"TXRAY_SQL_MAX_TEXT", "128"}, {"TXRAY_SQL_MAX_BIND", "16"}};
  Settings r = parse_settings(fake_getenv);
  EXPECT_EQ(r.mode, TextMode::raw);
  EXPECT_EQ(r.max_text, 128u);
  EXPECT_EQ(r.max_bind, 16u);
  g_env = {{"TXRAY_SQL", "off"}};
  EXPECT_EQ(parse_settings(fake_getenv).mode, TextMode::off);
}

TEST(Settings, BadValuesKeepDefaultsAndAreReported) {
  g_env = {{"TXRAY_SQL", "plain"}, {"TXRAY_SQL_MAX_TEXT", "12abc"}, {"TXRAY_SQL_MAX_BIND", "1"}};
  Settings s = parse_settings(fake_getenv);
  EXPECT_EQ(s.mode, TextMode::mask);
  EXPECT_EQ(s.max_text, kDefaultMaxText);
  EXPECT_EQ(s.max_bind, 64u);
  EXPECT_NE(s.problems.find("TXRAY_SQL='plain'"), std::string::npos);
  EXPECT_NE(s.problems.find("TXRAY_SQL_MAX_TEXT"), std::string::npos);
  EXPECT_NE(s.problems.find("TXRAY_SQL_MAX_BIND"), std::string::npos);
}

}  // namespace
}  // namespace txray::sql
