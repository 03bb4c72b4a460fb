// The SQL normalizer on real statements: what the masked text is, and when fingerprints are equal.
#include "protocols/sql/sql_normalizer.h"

#include <gtest/gtest.h>

#include <string>

namespace txray::sql {
namespace {

struct Case {
  const char* name;
  const char* in;
  const char* masked;
};

// Each rule of sql_normalizer.h, on statements as programs send them.
const Case kCases[] = {
    {"empty", "", ""},
    {"only_space", "  \n\t ", ""},
    {"plain", "SELECT id, name FROM users", "SELECT id, name FROM users"},
    {"whitespace", "SELECT\n  id,\tname\r\n FROM   users  ", "SELECT id, name FROM users"},
    {"integer", "SELECT * FROM t WHERE id = 42", "SELECT * FROM t WHERE id = ?"},
    {"decimal_exp", "SELECT 3.14, .5, 1e10, 2.5E-3, 6.02e+23", "SELECT ?, ?, ?, ?, ?"},
    {"negative", "SELECT * FROM t WHERE a = -5 AND b > -1.5e3", "SELECT * FROM t WHERE a = ? AND b > ?"},
    {"negative_after_keyword", "SELECT -7, +3", "SELECT ?, ?"},
    {"minus_is_binary", "SELECT a -1, b - 2, (c)-3 FROM t", "SELECT a -?, b - ?, (c)-?"
                                                             " FROM t"},
    {"string", "SELECT * FROM u WHERE name = 'alice'", "SELECT * FROM u WHERE name = ?"},
    {"string_escape", "INSERT INTO t(s) VALUES ('it''s ''quoted''')", "INSERT INTO t(s) VALUES (?)"},
    {"e_string", "SELECT E'it\\'s\\n', e'x\\\\'", "SELECT ?, ?"},
    {"hex", "SELECT X'DEADBEEF', x'00', 0xFF, 0X1a2B", "SELECT ?, ?, ?, ?"},
    {"bits_national_unicode", "SELECT B'1010', N'name', U&'d\\0061t'", "SELECT ?, ?, ?"},
    {"dollar", "SELECT $$it's a $ string$$, 1", "SELECT ?, ?"},
    {"dollar_tag", "DO $body$ BEGIN RAISE NOTICE 'x $$ y'; END $body$", "DO ?"},
    {"params_pg", "SELECT * FROM t WHERE a = $1 AND b = $12", "SELECT * FROM t WHERE a = $1 AND b = $12"},
    {"params_sqlite", "SELECT ?, ?3, :name, @var, $x FROM t", "SELECT ?, ?3, :name, @var, $x FROM t"},
    {"cast_not_param", "SELECT '5'::int, x::text FROM t", "SELECT ?::int, x::text FROM t"},
    {"identifiers_kept", "SELECT col1, t2.c_3, \"Mixed Case\", `back` FROM \"tbl 9\"",
     "SELECT col1, t2.c_3, \"Mixed Case\", `back` FROM \"tbl 9\""},
    {"quoted_ident_with_quote", "SELECT \"a\"\"b\" FROM t WHERE x='y'", "SELECT \"a\"\"b\" FROM t WHERE x=?"},
    {"ident_with_dollar", "SELECT foo$bar FROM t", "SELECT foo$bar FROM t"},
    {"line_comment", "SELECT 1 -- user=bob 42\nFROM t", "SELECT ? FROM t"},
    {"block_comment", "SELECT /* id=99 */ a FROM t /* x /* nested 7 */ y */ WHERE b=2",
     "SELECT a FROM t WHERE b=?"},
    {"in_list", "SELECT * FROM t WHERE id IN (1, 2, 3, 4)", "SELECT * FROM t WHERE id IN (?+)"},
    {"in_list_mixed", "SELECT * FROM t WHERE id in ('a', $1, -3, ?)", "SELECT * FROM t WHERE id in (?+)"},
    {"in_one", "SELECT * FROM t WHERE id IN (7)", "SELECT * FROM t WHERE id IN (?+)"},
    {"in_subquery_kept", "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE x = 1)",
     "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE x = ?)"},
    {"in_expression_kept", "SELECT * FROM t WHERE id IN (a + 1, 2)", "SELECT * FROM t WHERE id IN (a + ?, ?)"},
    {"array", "SELECT * FROM t WHERE id = ANY(ARRAY[1,2,3])", "SELECT * FROM t WHERE id = ANY(ARRAY[?+])"},
    {"values_one_row", "INSERT INTO t VALUES (1, 'a')", "INSERT INTO t VALUES (?, ?)"},
    {"values_many_rows", "INSERT INTO t (a, b) VALUES (1, 'a'), (2, 'b'),(3,'c') ON CONFLICT DO NOTHING",
     "INSERT INTO t (a, b) VALUES (?, ?), ... ON CONFLICT DO NOTHING"},
    {"values_nested_parens", "INSERT INTO t VALUES (lower('A'), (1+2)), (lower('B'), (3+4))",
     "INSERT INTO t VALUES (lower(?), (?+?)), ..."},
    {"unicode", "SELECT 'héllo wörld ✓', naïve FROM café WHERE ✓ = 1", "SELECT ?, naïve FROM café WHERE ✓ = ?"},
    {"unterminated_string", "SELECT 'never closed, secret 123", "SELECT ?"},
    {"unterminated_comment", "SELECT 1 /* never closed 456", "SELECT ?"},
    {"unterminated_dollar", "SELECT $tag$ secret", "SELECT ?"},
    {"garbage", "\x01\x02 ]]] ((( 'x", "\x01\x02 ]]] ((( ?"},
    {"number_glued_to_word", "SELECT 123abc, 0xFFZZ", "SELECT ?, ?"},
    {"pg_operators", "SELECT a->>'k', b @> '{1}', c <> 1, d != -2 FROM t",
     "SELECT a->>?, b @> ?, c <> ?, d != ? FROM t"},
    // found by agent.fuzz_sql_normalize: the inner VALUES was kept whole the first time and shortened when
    // the masked text was masked again (another text, another fingerprint)
    {"nested_multi_row_values", "INSERT INTO t VALUES ((SELECT max(x) FROM (VALUES (1), (2), (3)) v), 4), (5, 6)",
     "INSERT INTO t VALUES ((SELECT max(x) FROM (VALUES (?), ...) v), ?), ..."},
    {"limit_offset", "SELECT * FROM t LIMIT 10 OFFSET -0", "SELECT * FROM t LIMIT ? OFFSET ?"},
    {"multi_statement", "BEGIN; UPDATE t SET a = 1 WHERE id = 2; COMMIT;",
     "BEGIN; UPDATE t SET a = ? WHERE id = ?; COMMIT;"},
};

// True when every multi-byte sequence in s is complete.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

class MaskTable : public ::testing::TestWithParam<Case> {};

TEST_P(MaskTable, MasksLiteralsKeepsShape) {
  const Case& c = GetParam();
  EXPECT_EQ(normalize(c.in).text, c.masked) << "input: " << c.in;
}

INSTANTIATE_TEST_SUITE_P(Rules, MaskTable, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Normalize, MaskedTextNeverContainsTheValues) {
  const char* sql =
      "SELECT * FROM t WHERE s = 'sekrit1' AND e = E'sekrit2\\'' AND d = $q$sekrit3$q$ AND n = -98765 "
      "AND h = X'ABCDEF' AND i IN (11111, 22222) /* sekrit4 */ -- sekrit5\n";
  std::string text = normalize(sql).text;
  for (const char* v : {"sekrit", "98765", "ABCDEF", "11111", "22222"})
    EXPECT_EQ(text.find(v), std::string::npos) << v << " leaked into " << text;
}

TEST(Fingerprint, SameShapeSameFingerprint) {
  uint64_t a = normalize("SELECT * FROM users WHERE id = 1 AND name = 'x'").fingerprint;
  EXPECT_EQ(a, normalize("select *\n from USERS where ID = 9999 and NAME = 'other' -- c").fingerprint);
  EXPECT_EQ(a, normalize("SELECT*FROM users WHERE id=-3 AND name=E'y'").fingerprint);
  EXPECT_EQ(normalize("SELECT 1 FROM t WHERE id IN (1,2)").fingerprint,
            normalize("SELECT 7 FROM t WHERE id IN (5, 6, 7, 8, 9)").fingerprint);
  EXPECT_EQ(normalize("INSERT INTO t VALUES (1,2),(3,4)").fingerprint,
            normalize("INSERT INTO t VALUES (5,6),(7,8),(9,10)").fingerprint);
}

TEST(Fingerprint, DifferentShapeDifferentFingerprint) {
  uint64_t a = normalize("SELECT * FROM users WHERE id = 1").fingerprint;
  EXPECT_NE(a, normalize("SELECT * FROM users WHERE uid = 1").fingerprint);
  EXPECT_NE(a, normalize("SELECT * FROM users WHERE id = $1").fingerprint);
  EXPECT_NE(a, normalize("SELECT * FROM users WHERE id > 1").fingerprint);
  EXPECT_NE(a, normalize("SELECT * FROM \"Users\" WHERE id = 1").fingerprint);
  EXPECT_NE(normalize("SELECT ab FROM t").fingerprint, normalize("SELECT a b FROM t").fingerprint);
  EXPECT_NE(normalize("SELECT \"A\" FROM t").fingerprint, normalize("SELECT \"a\" FROM t").fingerprint);
  EXPECT_NE(normalize("").fingerprint, normalize("SELECT 1").fingerprint);
}

TEST(Fingerprint, IndependentOfMode) {
  const char* sql = "UPDATE t SET v = 'x' WHERE id = 5";
  uint64_t f = normalize(sql, TextMode::mask).fingerprint;
  EXPECT_EQ(f, normalize(sql, TextMode::raw).fingerprint);
  EXPECT_EQ(f, normalize(sql, TextMode::off).fingerprint);
}

TEST(Modes, RawKeepsValuesOffKeepsNothing) {
  const char* sql = "  UPDATE t SET v = 'x' WHERE id = 5 ";
  EXPECT_EQ(normalize(sql, TextMode::raw).text, "UPDATE t SET v = 'x' WHERE id = 5");
  EXPECT_EQ(normalize(sql, TextMode::off).text, "");
}

TEST(Modes, LongTextIsCutOnACharacterBoundary) {
  std::string sql = "SELECT ";
  for (int i = 0; i < 3000; ++i) sql += "é_col, ";
  sql += "x FROM t";
  std::string raw = normalize(sql, TextMode::raw, 100).text;
  EXPECT_LE(raw.size(), 100u);
  EXPECT_EQ(raw.substr(raw.size() - 3), "...");
  EXPECT_TRUE(valid_utf8(raw)) << raw;
  std::string masked = normalize(sql, TextMode::mask, 100).text;
  EXPECT_LE(masked.size(), 100u);
  EXPECT_TRUE(valid_utf8(masked)) << masked;
}

TEST(Modes, VeryLongStatementIsLinearAndComplete) {
  std::string sql = "SELECT * FROM t WHERE id IN (";
  for (int i = 0; i < 200000; ++i) sql += std::to_string(i) + ",";
  sql += "0) AND s = 'end'";
  Normalized n = normalize(sql);
  EXPECT_EQ(n.text, "SELECT * FROM t WHERE id IN (?+) AND s = ?");
}

TEST(Truncate, DoesNotSplitMultibyte) {
  std::string s = "aaé";  // 'é' is two bytes: the cut must not keep half of it
  truncate_utf8(s, 3 + 3);
  EXPECT_EQ(s, "aaé");
  std::string t = "abcdéfgh";
  truncate_utf8(t, 8);
  EXPECT_EQ(t, "abcd...");
}

}  // namespace
}  // namespace txray::sql

namespace txray::sql {
namespace {

// Random "token soup" over the characters that matter to the lexer: never a crash, the text bounded,
// and masking is idempotent (masked text masks to itself, with the same fingerprint), so the agent never
// shows a text that would fingerprint differently from what it stands for.
TEST(Normalize, NestedMultiRowValuesAreIdempotent) {
  Normalized a = normalize("INSERT INTO t VALUES ((SELECT max(x) FROM (VALUES (1), (2), (3)) v), 4), (5, 6)");
  Normalized b = normalize(a.text);
  EXPECT_EQ(b.text, a.text);
  EXPECT_EQ(b.fingerprint, a.fingerprint);
}

TEST(Normalize, RandomInputIsHandledAndIdempotent) {
  static const char* const kPieces[] = {"'", "\"", "`", "$", "$$", "$t$", "-", "--", "+", "/", "*", "/*", "*/", ".",
                                        ",", "(", ")", "[", "]", "0", "7", "1.5", "e", "E", "x", "X", "b", "N",
                                        "U&", "?", ":", "::", "@", " ", "\n", "\\", ";", "in", "IN", "values",
                                        "ARRAY", "select", "é", "_a1", "=", "<>"};
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (int i = 0; i < 20000; ++i) {
    std::string sql;
    int n = int(next() % 24);
    for (int k = 0; k < n; ++k) sql += kPieces[next() % (sizeof kPieces / sizeof *kPieces)];
    Normalized a = normalize(sql, TextMode::mask, 256);
    ASSERT_LE(a.text.size(), 256u) << sql;
    Normalized b = normalize(a.text, TextMode::mask, 256);
    ASSERT_EQ(b.text, a.text) << "input: " << sql;
    ASSERT_EQ(b.fingerprint, a.fingerprint) << "input: " << sql;
  }
}

// MySQL/MariaDB (Dialect::mysql): '\' escapes in strings, ".." strings, '#' comments, `..` identifiers.
const Case kMysqlCases[] = {
    {"backslash_quote", "SELECT * FROM u WHERE name = 'O\\'Brien' AND pw = 'hunter2'",
     "SELECT * FROM u WHERE name = ? AND pw = ?"},
    {"backslash_backslash", "SELECT 'C:\\\\', 'next secret'", "SELECT ?, ?"},
    {"doubled_quote", "SELECT 'it''s'", "SELECT ?"},
    {"double_quoted_string", "SELECT * FROM u WHERE name = \"bob \\\" smith\"", "SELECT * FROM u WHERE name = ?"},
    {"hash_comment", "SELECT a FROM t # user=bob 42\nWHERE b = 1", "SELECT a FROM t WHERE b = ?"},
    {"dash_comment", "SELECT a -- secret 7\nFROM t", "SELECT a FROM t"},
    {"version_comment", "SELECT /*!40001 SQL_NO_CACHE */ a FROM t", "SELECT a FROM t"},
    {"backticks_kept", "SELECT `order`, `a``b` FROM `db`.`t` WHERE `x` = 5", "SELECT `order`, `a``b` FROM `db`.`t` WHERE `x` = ?"},
    {"hex_bits", "SELECT X'4D', 0x4D, b'101', 0b11", "SELECT ?, ?, ?, ?"},
    {"charset_introducer", "SELECT _utf8mb4'secret' COLLATE utf8mb4_bin", "SELECT _utf8mb4? COLLATE utf8mb4_bin"},
    {"national", "SELECT N'secret\\'s'", "SELECT ?"},
    {"user_variable", "SET @total = 10; SELECT @total, @@session.sql_mode", "SET @total = ?; SELECT @total, @@session.sql_mode"},
    {"in_list", "DELETE FROM t WHERE id IN (1, '2', \"3\")", "DELETE FROM t WHERE id IN (?+)"},
    {"values_rows", "INSERT INTO t VALUES (1, 'a\\'b'), (2, \"c\")", "INSERT INTO t VALUES (?, ?), ..."},
    {"unterminated_backslash", "SELECT 'secret\\", "SELECT ?"},
};

class MysqlMaskTable : public ::testing::TestWithParam<Case> {};

TEST_P(MysqlMaskTable, MasksLiteralsKeepsShape) {
  const Case& c = GetParam();
  Normalized n = normalize(c.in, TextMode::mask, kDefaultMaxText, Dialect::mysql);
  EXPECT_EQ(n.text, c.masked) << c.in;
  Normalized again = normalize(n.text, TextMode::mask, kDefaultMaxText, Dialect::mysql);
  EXPECT_EQ(again.text, n.text);
  EXPECT_EQ(again.fingerprint, n.fingerprint);
}

INSTANTIATE_TEST_SUITE_P(Mysql, MysqlMaskTable, ::testing::ValuesIn(kMysqlCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(MysqlDialect, StandardDialectWouldLeakWhatMysqlMasks) {
  // The reason for the dialect: read as standard SQL, the backslash ends the string early and the rest
  // of the value becomes words.
  const char* q = "SELECT 1 FROM u WHERE name = 'O\\'secret' # trailing secret";
  EXPECT_NE(normalize(q).text.find("secret"), std::string::npos);
  EXPECT_EQ(normalize(q, TextMode::mask, kDefaultMaxText, Dialect::mysql).text, "SELECT ? FROM u WHERE name = ?");
}

TEST(MysqlDialect, NoBackslashEscapesMode) {
  // sql_mode NO_BACKSLASH_ESCAPES: '\' is an ordinary character, so 'C:\' ends at its quote.
  EXPECT_EQ(normalize("SELECT 'C:\\', 'secret'", TextMode::mask, kDefaultMaxText, Dialect::mysql_no_backslash).text,
            "SELECT ?, ?");
}

TEST(MysqlDialect, SameStatementSameFingerprintWhateverTheValues) {
  auto fp = [](const char* q) { return normalize(q, TextMode::mask, kDefaultMaxText, Dialect::mysql).fingerprint; };
  EXPECT_EQ(fp("SELECT * FROM t WHERE a = 'x\\'y' # c1"), fp("select *   from t where a = \"z\""));
  EXPECT_NE(fp("SELECT * FROM t WHERE a = 1"), fp("SELECT * FROM t WHERE b = 1"));
}

TEST(ErrorMessage, QuotedPartsAreMaskedUnlessRaw) {
  EXPECT_EQ(mask_error_message("Duplicate entry 'bob@x.org' for key 'email'", TextMode::mask), "Duplicate entry ?");
  EXPECT_EQ(mask_error_message("You have an error in your SQL syntax; check the manual that corresponds to your "
                               "MariaDB server version for the right syntax to use near 'WHERE pw = 'hunter2'' at "
                               "line 1", TextMode::mask),
            "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version "
            "for the right syntax to use near ? at line 1");
  EXPECT_EQ(mask_error_message("Table 'db.t' doesn't exist", TextMode::off), "Table ? doesn't exist");
  EXPECT_EQ(mask_error_message("Lone quote 'secret", TextMode::mask), "Lone quote ?");
  EXPECT_EQ(mask_error_message("No quotes here", TextMode::mask), "No quotes here");
  EXPECT_EQ(mask_error_message("Can't find file: 'secret.frm'", TextMode::mask), "Can't find file: ?");
  EXPECT_EQ(mask_error_message("Incorrect integer value: 'O'Brien' for column `t`.`a` at row 1", TextMode::mask),
            "Incorrect integer value: ? for column `t`.`a` at row 1");
  EXPECT_EQ(mask_error_message("Duplicate entry '1' for key 'PRIMARY'", TextMode::raw),
            "Duplicate entry '1' for key 'PRIMARY'");
}

TEST(MysqlDialect, RandomInputIsHandledAndIdempotent) {
  static const char* const kPieces[] = {"'", "\"", "`", "#", "\\", "\\'", "''", "-", "--", "/*", "*/", "/*!", "0",
                                        "0x1", "b'", "x'", "N'", "_utf8", "?", "@", "@@", " ", "\n", "in", "IN",
                                        "values", "(", ")", ",", "select", "é", "="};
  uint64_t seed = 0x2545F4914F6CDD1Dull;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (Dialect d : {Dialect::mysql, Dialect::mysql_no_backslash}) {
    for (int i = 0; i < 20000; ++i) {
      std::string sql;
      int n = int(next() % 24);
      for (int k = 0; k < n; ++k) sql += kPieces[next() % (sizeof kPieces / sizeof *kPieces)];
      Normalized a = normalize(sql, TextMode::mask, 256, d);
      ASSERT_LE(a.text.size(), 256u) << sql;
      for (const Token& t : tokenize(a.text, d)) ASSERT_NE(t.kind, TokenKind::literal) << sql << " -> " << a.text;
      Normalized b = normalize(a.text, TextMode::mask, 256, d);
      ASSERT_EQ(b.text, a.text) << "input: " << sql;
      ASSERT_EQ(b.fingerprint, a.fingerprint) << "input: " << sql;
    }
  }
}

}  // namespace
}  // namespace txray::sql
