// The PostgreSQL wire client: message decoding, and the rows real drivers' byte streams make (captured
// from asyncpg, node-postgres, PostgreSQL JDBC and psql by capture.py), replayed in the drivers' own
// chunks, split at every offset and merged, with the agent's real transaction core (no preload).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "protocols/pg/pg_client.h"
#include "protocols/pg/pg_conn.h"
#include "protocols/pg/pg_messages.h"
#include "protocols/sql/sql_config.h"
#include "support/recorder_fixture.h"

using namespace txray;
using namespace txray::pg;

namespace {

// --- captures ------------------------------------------------------------------------------------------

struct Chunk {
  bool sent;
  std::string bytes;
};

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(char(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<Chunk> load(const std::string& name) {
  std::string dir = __FILE__;
  dir = dir.substr(0, dir.rfind('/'));
  std::ifstream f(dir + "/captures/" + name + ".txt");
  EXPECT_TRUE(f.good()) << name;
  std::vector<Chunk> out;
  std::string d, h;
  while (f >> d >> h) out.push_back({d == ">", unhex(h)});
  return out;
}

// Consecutive chunks of one direction as one (many messages in one write / read).
std::vector<Chunk> merged(const std::vector<Chunk>& in) {
  std::vector<Chunk> out;
  for (const Chunk& c : in) {
    if (!out.empty() && out.back().sent == c.sent) out.back().bytes += c.bytes;
    else out.push_back(c);
  }
  return out;
}

// --- message builders ---------------------------------------------------------------------------------

std::string be32s(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }
std::string be16s(uint16_t v) { return {char(v >> 8), char(v)}; }
std::string msg(char type, const std::string& body) { return std::string(1, type) + be32s(uint32_t(body.size() + 4)) + body; }
std::string cstr(const std::string& s) { return s + std::string(1, '\0'); }
std::string startup(const std::string& user, const std::string& db) {
  std::string body = be32s(kProtocol3) + cstr("user") + cstr(user) + cstr("database") + cstr(db) + std::string(1, '\0');
  return be32s(uint32_t(body.size() + 4)) + body;
}
std::string parse_msg(const std::string& name, const std::string& q) { return msg('P', cstr(name) + cstr(q) + be16s(0)); }
std::string bind_text(const std::string& portal, const std::string& stmt, const std::vector<std::string>& vals) {
  std::string b = cstr(portal) + cstr(stmt) + be16s(0) + be16s(uint16_t(vals.size()));
  for (const auto& v : vals) b += be32s(uint32_t(v.size())) + v;
  return msg('B', b + be16s(0));
}
std::string execute_msg(const std::string& portal = "") { return msg('E', cstr(portal) + be32s(0)); }
const std::string kSync = msg('S', "");
const std::string kReady = msg('Z', "I");
const std::string kAuthOk = msg('R', be32s(0));
std::string complete_msg(const std::string& tag) { return msg('C', cstr(tag)); }
std::string data_row() { return msg('D', be16s(1) + be32s(1) + "x"); }
std::string error_msg(const std::string& code, const std::string& m) {
  return msg('E', "SERROR" + std::string(1, '\0') + "VERROR" + std::string(1, '\0') + "C" + cstr(code) + "M" + cstr(m) +
                      std::string(1, '\0'));
}

// --- the fixture ----------------------------------------------------------------------------------------

Transaction* current_tx(ReqRef&) { return rec::current(); }

std::string attr(const Step& s, const std::string& key) {
  for (const Attr& a : s.attrs)
    if (a.key == key) return a.value;
  return "-";
}

// One line per SQL / DB_CONNECT row: what a profile shows of it.
std::string describe(const Transaction& t) {
  std::ostringstream o;
  for (const Step& s : t.steps) {
    if (s.kind != StepKind::SQL && s.kind != StepKind::DB_CONNECT) continue;
    o << (s.kind == StepKind::SQL ? "SQL " : "CONNECT ") << s.text.view();
    if (s.kind == StepKind::SQL) {
      o << " | params=" << attr(s, "params") << " rows=" << s.rows << " changes=" << s.changes;
      if (attr(s, "notices") != "-") o << " notices=" << attr(s, "notices");
      if (attr(s, "notifications") != "-") o << " notifications=" << attr(s, "notifications");
    } else {
      o << " | db=" << attr(s, "database") << " user=" << attr(s, "user") << " host=" << attr(s, "host")
        << " port=" << attr(s, "port");
    }
    if (!s.error.empty()) o << " error=" << s.error << " sqlstate=" << attr(s, "sqlstate");
    if (s.open) o << " OPEN";
    o << "\n";
  }
  return o.str();
}

class PgClientTest : public test::RecorderFixture {
 protected:
  PgClientTest() : RecorderFixture("pg", "test", 200) {}
  void SetUp() override {
    RecorderFixture::SetUp();
    slot = std::make_unique<FdSlot>();
    slot->kind.store(FdKind::outbound);
    env.slot = slot.get();
    env.peer = "127.0.0.1:5432";
    env.owner = &owner;
  }
  void TearDown() override {
    set_mode(sql::TextMode::mask);
    RecorderFixture::TearDown();
  }
  static void set_mode(sql::TextMode m) {
    // settings() is made once per process from the environment; the tests switch its mode in place.
    const_cast<sql::Settings&>(sql::settings()).mode = m;
  }
  std::unique_ptr<PgConn> conn() { return std::make_unique<PgConn>(env, current_tx); }
  void sent(PgConn& c, const std::string& b) {
    slot->add_written(b.size());
    c.on_sent(b.data(), b.size());
  }
  void received(PgConn& c, const std::string& b) {
    slot->add_read(b.size());
    c.on_received(b.data(), b.size());
  }
  // Replays chunks in one transaction; `piece` > 0 feeds each chunk `piece` bytes at a time; chunk `cut`
  // (when >= 0) is fed as two parts split at `at`.
  std::string replay(const std::vector<Chunk>& chunks, size_t piece = 0, int cut = -1, size_t at = 0) {
    Transaction* t = begin();
    auto c = conn();
    for (size_t i = 0; i < chunks.size(); ++i) {
      const std::string& b = chunks[i].bytes;
      std::vector<std::string> parts;
      if (int(i) == cut) parts = {b.substr(0, at), b.substr(at)};
      else if (piece) for (size_t o = 0; o < b.size(); o += piece) parts.push_back(b.substr(o, piece));
      else parts = {b};
      for (const auto& p : parts) {
        if (p.empty()) continue;
        chunks[i].sent ? sent(*c, p) : received(*c, p);
      }
    }
    EXPECT_FALSE(c->stopped());
    c->on_end("");
    c.reset();
    return describe(end(t));
  }
  // The natural replay, then every split and merge of it: the same rows every time.
  std::string replay_all_ways(const std::string& name) {
    std::vector<Chunk> chunks = load(name);
    std::string want = replay(chunks);
    EXPECT_EQ(replay(merged(chunks)), want) << "merged";
    for (size_t piece : {1, 2, 3, 5, 7, 64}) EXPECT_EQ(replay(chunks, piece), want) << "pieces of " << piece;
    for (size_t i = 0; i < chunks.size(); ++i)
      for (size_t at = 1; at < chunks[i].bytes.size(); ++at) {
        std::string got = replay(chunks, 0, int(i), at);
        if (got != want) {
          ADD_FAILURE() << name << " chunk " << i << " split at " << at << ":\n" << got;
          return want;
        }
      }
    return want;
  }

  std::unique_ptr<FdSlot> slot;
  WireEnv env;
  ReqRef owner;
};

}  // namespace

// --- the start of a connection ----------------------------------------------------------------------------

TEST(PgStart, RecognisesStartupSslAndGss) {
  std::string s = startup("u", "d");
  EXPECT_TRUE(looks_like_start(s.data(), std::min<size_t>(16, s.size())));
  std::string ssl = be32s(8) + be32s(kSslRequest), gss = be32s(8) + be32s(kGssEncRequest);
  std::string cancel = be32s(16) + be32s(kCancelRequest) + be32s(1) + be32s(2);
  EXPECT_TRUE(looks_like_start(ssl.data(), ssl.size()));
  EXPECT_TRUE(looks_like_start(gss.data(), gss.size()));
  EXPECT_FALSE(looks_like_start(cancel.data(), cancel.size()));
  EXPECT_FALSE(looks_like_start(s.data(), 7));
  EXPECT_FALSE(looks_like_start("GET / HTTP/1.1\r\n", 16));
  std::string huge = be32s(20000) + be32s(kProtocol3);
  EXPECT_FALSE(looks_like_start(huge.data(), huge.size()));
  std::string v2 = be32s(40) + be32s(131072);
  EXPECT_FALSE(looks_like_start(v2.data(), v2.size()));
}

// --- message bodies ---------------------------------------------------------------------------------------

TEST(PgMessages, CommandCompleteTags) {
  EXPECT_EQ(parse_tag(cstr("INSERT 0 5")).count, 5);
  EXPECT_TRUE(parse_tag(cstr("INSERT 0 5")).write);
  EXPECT_TRUE(parse_tag(cstr("COPY 2")).write);
  EXPECT_TRUE(parse_tag(cstr("MERGE 3")).write);
  EXPECT_FALSE(parse_tag(cstr("SELECT 3")).write);
  EXPECT_EQ(parse_tag(cstr("SELECT 3")).count, 3);
  EXPECT_EQ(parse_tag(cstr("CREATE TABLE")).count, -1);
  EXPECT_EQ(parse_tag(cstr("UPDATE 99999999999999999999")).count, -1);
  EXPECT_EQ(parse_tag("").count, -1);
}

TEST(PgMessages, ErrorFieldsPreferTheUnlocalizedSeverity) {
  std::string b = "SFEHLER" + std::string(1, '\0') + "VERROR" + std::string(1, '\0') + "C42P01" + std::string(1, '\0') +
                  "Mno such table" + std::string(2, '\0');
  ServerError e = parse_error(b);
  EXPECT_EQ(e.severity, "ERROR");
  EXPECT_EQ(e.sqlstate, "42P01");
  EXPECT_EQ(e.message, "no such table");
  e = parse_error("SFATAL" + std::string(1, '\0') + "C2");  // cut: what is there
  EXPECT_EQ(e.severity, "FATAL");
  EXPECT_EQ(e.sqlstate, "2");
}

TEST(PgMessages, BindFormatsAndCutValues) {
  std::string body = cstr("p") + cstr("s") + be16s(3) + be16s(0) + be16s(1) + be16s(1) + be16s(3) + be32s(2) + "42" +
                     be32s(4) + be32s(7) + be32s(0xffffffff) + be16s(0);
  BindMsg b;
  ASSERT_TRUE(parse_bind(body, &b));
  EXPECT_EQ(b.portal, "p");
  EXPECT_EQ(b.statement, "s");
  ASSERT_EQ(b.params.size(), 3u);
  EXPECT_FALSE(b.params[0].binary);
  EXPECT_EQ(b.params[0].value, "42");
  EXPECT_TRUE(b.params[1].binary);
  EXPECT_EQ(b.params[1].length, 4u);
  EXPECT_TRUE(b.params[2].null);
  // Cut inside the second value: the first is whole, the second marked cut.
  ASSERT_TRUE(parse_bind(body.substr(0, 26), &b));
  EXPECT_TRUE(b.cut);
  EXPECT_EQ(b.total, 3);
  ASSERT_EQ(b.params.size(), 2u);
  EXPECT_TRUE(b.params[1].cut);
  // Two formats for three parameters: not a Bind.
  std::string bad = cstr("") + cstr("") + be16s(2) + be16s(0) + be16s(0) + be16s(3);
  EXPECT_FALSE(parse_bind(bad, &b));
}

TEST(PgMessages, BinaryValuesAsText) {
  auto text = [](uint32_t oid, const std::string& v) {
    std::string out;
    return binary_to_text(oid, v, &out) ? out : std::string("<no>");
  };
  EXPECT_EQ(text(23, be32s(uint32_t(-7))), "-7");
  EXPECT_EQ(text(21, be16s(300)), "300");
  EXPECT_EQ(text(20, be32s(0xffffffff) + be32s(0xfffffffe)), "-2");
  EXPECT_EQ(text(16, std::string(1, '\1')), "t");
  EXPECT_EQ(text(701, unhex("4004000000000000")), "2.5");
  EXPECT_EQ(text(700, unhex("3fc00000")), "1.5");
  EXPECT_EQ(text(25, "bob"), "bob");
  EXPECT_EQ(text(17, std::string(5, 'x')), "bytea(5)");
  EXPECT_EQ(text(2950, unhex("a0eebc999c0b4ef8bb6d6bb9bd380a11")), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  EXPECT_EQ(text(1082, be32s(0)), "2000-01-01");
  EXPECT_EQ(text(1082, be32s(uint32_t(-1))), "1999-12-31");
  // 2024-01-02 03:04:05.5 UTC: 757,479,845.5 s after 2000-01-01.
  uint64_t us = 757479845500000ull;
  EXPECT_EQ(text(1184, be32s(uint32_t(us >> 32)) + be32s(uint32_t(us))), "2024-01-02 03:04:05.5+00");
  EXPECT_EQ(text(1114, be32s(uint32_t(us >> 32)) + be32s(uint32_t(us))), "2024-01-02 03:04:05.5");
  // numeric 1.50: 1 digit group... ndigits 2 (1, 5000), weight 0, sign +, dscale 2
  EXPECT_EQ(text(1700, be16s(2) + be16s(0) + be16s(0) + be16s(2) + be16s(1) + be16s(5000)), "1.50");
  EXPECT_EQ(text(1700, be16s(2) + be16s(1) + be16s(0x4000) + be16s(0) + be16s(12) + be16s(3456)), "-123456");
  EXPECT_EQ(text(1700, be16s(1) + be16s(0xffff) + be16s(0) + be16s(3) + be16s(50)), "0.005");
  EXPECT_EQ(text(1700, be16s(0) + be16s(0) + be16s(0xC000) + be16s(0)), "NaN");
  EXPECT_EQ(text(23, "abc"), "<no>");   // a wrong length is no value
  EXPECT_EQ(text(1700, be16s(5)), "<no>");
  EXPECT_EQ(text(600, "x"), "<no>");    // point: not decoded
}

TEST(PgMessages, SplitsSimpleQueriesOutsideQuotesCommentsAndDollarQuotes) {
  auto s = split_statements("SELECT 1; SELECT 'a;b' AS x; -- c;\nSELECT $$d;e$$;\n /* ; */ ;");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], "SELECT 1");
  EXPECT_EQ(s[1], "SELECT 'a;b' AS x");
  EXPECT_EQ(s[2], "SELECT $$d;e$$");
  EXPECT_EQ(split_statements("  SELECT 2  ").at(0), "SELECT 2");
  EXPECT_TRUE(split_statements(" ; ").empty());
  EXPECT_TRUE(split_statements("").empty());
}

TEST(PgMessages, FramerBreaksOnBadLengthsAndTypes) {
  int n = 0;
  auto count = [&](const Message&) { return ++n, true; };
  Framer f(Side::backend);
  std::string ok = kReady + msg('D', std::string(100, 'x'));
  EXPECT_TRUE(f.feed(ok.data(), ok.size(), count));
  EXPECT_EQ(n, 2);
  std::string short_len = std::string("Z") + be32s(3);
  EXPECT_FALSE(f.feed(short_len.data(), short_len.size(), count));
  EXPECT_TRUE(f.broken());
  Framer g(Side::backend);
  std::string huge = std::string("D") + be32s((1u << 30) + 5);
  EXPECT_FALSE(g.feed(huge.data(), huge.size(), count));
  Framer h(Side::frontend);
  std::string unknown = msg('Y', "");
  EXPECT_FALSE(h.feed(unknown.data(), unknown.size(), count));
  // A DataRow of almost 1 GiB is counted by length, never kept.
  Framer k(Side::backend);
  std::string big = std::string("D") + be32s(1u << 30);
  size_t kept = 0;
  EXPECT_TRUE(k.feed(big.data(), big.size(), [&](const Message&) { return true; }));
  std::string block(1 << 16, 'x');
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(k.feed(block.data(), block.size(), [&](const Message& m) {
    kept = m.body.size();
    return true;
  }));
  EXPECT_EQ(kept, 0u);
}

// --- real drivers ----------------------------------------------------------------------------------------

TEST_F(PgClientTest, Asyncpg) {
  std::string got = replay_all_ways("asyncpg-0");
  EXPECT_EQ(got,
            "CONNECT postgresql://postgres@127.0.0.1:5432/postgres | db=postgres user=postgres host=127.0.0.1 port=5432\n"
            "SQL CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text, price numeric(?,?), at timestamptz, u "
            "uuid, ok bool, f float8, b bytea) | params=- rows=0 changes=-1\n"
            "SQL TRUNCATE items | params=- rows=0 changes=-1\n"
            "SQL INSERT INTO items VALUES (?, ?, ?, ?, ?, true, ?, ?) | params=- rows=0 changes=1\n"
            "SQL SELECT ? | params=- rows=1 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=1 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=0 changes=-1\n"
            "SQL SELECT * FROM items WHERE price > $1 AND at < $2 AND u = $3 AND ok = $4 AND f < $5 AND b <> $6 | "
            "params=binary, binary, binary, binary, binary, binary rows=1 changes=-1\n"
            "SQL SELECT * FROM missing_table WHERE id = $1 | params=- rows=-1 changes=-1 error=ERROR 42P01: relation "
            "\"missing_table\" does not exist sqlstate=42P01\n"
            "SQL INSERT INTO items (id, name) VALUES ($1, $2) | params=binary, binary rows=0 changes=1\n"
            "SQL INSERT INTO items (id, name) VALUES ($1, $2) | params=binary, binary rows=0 changes=1\n"
            "SQL INSERT INTO items (id, name) VALUES ($1, $2) | params=binary, binary rows=0 changes=1\n"
            "SQL PREPARE __asyncpg_stmt_5__ AS SELECT \"id\", \"name\" FROM \"items\" LIMIT ? | params=- rows=-1 "
            "changes=-1\n"
            "SQL COPY \"items\"(\"id\", \"name\") FROM STDIN (FORMAT binary) | params=- rows=0 changes=2\n"
            "SQL BEGIN | params=- rows=0 changes=-1\n"
            "SQL SELECT id FROM items ORDER BY id | params=- rows=-1 changes=-1\n"
            "SQL SELECT id FROM items ORDER BY id | params=- rows=2 changes=-1\n"
            "SQL SELECT id FROM items ORDER BY id | params=- rows=2 changes=-1\n"
            "SQL COMMIT | params=- rows=0 changes=-1\n"
            "SQL LISTEN \"chan\" | params=- rows=0 changes=-1\n"
            "SQL NOTIFY chan, ? | params=- rows=0 changes=-1 notifications=1\n"
            "SQL SELECT pg_sleep(?) | params=- rows=1 changes=-1\n");
}

TEST_F(PgClientTest, AsyncpgRawShowsDecodedBinaryParameters) {
  set_mode(sql::TextMode::raw);
  std::string got = replay(load("asyncpg-0"));
  EXPECT_NE(got.find("SELECT name FROM items WHERE id = $1 | params='1' rows=1"), std::string::npos) << got;
  EXPECT_NE(got.find("SELECT name FROM items WHERE id = $1 | params='2' rows=0"), std::string::npos) << got;
  EXPECT_NE(got.find("params='0.5', '2030-01-01 00:00:00+00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 't', '3', "
                     "bytea(1) rows=1"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("VALUES ($1, $2) | params='11', 'b'"), std::string::npos) << got;
}

TEST_F(PgClientTest, NodePostgres) {
  std::string got = replay_all_ways("node-pg-0");
  EXPECT_EQ(got,
            "CONNECT postgresql://postgres@127.0.0.1:5432/postgres | db=postgres user=postgres host=127.0.0.1 port=5432\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=text rows=1 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=text rows=0 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=text rows=1 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=text rows=1 changes=-1\n"
            "SQL UPDATE items SET name = ? WHERE id >= ? | params=- rows=0 changes=5\n"
            "SQL SELECT count(*) FROM items | params=- rows=1 changes=-1\n"
            "SQL SELECT * FROM missing_table WHERE id = $1 | params=text rows=-1 changes=-1 error=ERROR 42P01: relation "
            "\"missing_table\" does not exist sqlstate=42P01\n"
            "SQL SELECT * FROM missing_table | params=- rows=-1 changes=-1 error=ERROR 42P01: relation \"missing_table\" "
            "does not exist sqlstate=42P01\n"
            "SQL  | params=- rows=0 changes=-1\n"
            "SQL SELECT ? | params=- rows=1 changes=-1\n");
  set_mode(sql::TextMode::raw);
  got = replay(load("node-pg-0"));
  EXPECT_NE(got.find("WHERE id = $1 | params='10' rows=1"), std::string::npos) << got;
}

TEST_F(PgClientTest, Jdbc) {
  std::string got = replay_all_ways("jdbc-0");
  EXPECT_EQ(got,
            "CONNECT postgresql://postgres@127.0.0.1:5432/postgres | db=postgres user=postgres host=127.0.0.1 port=5432\n"
            "SQL SET extra_float_digits = ? | params=- rows=0 changes=-1\n"
            "SQL SET application_name = ? | params=- rows=0 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=0 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=1 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=0 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=0 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=1 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=0 changes=-1\n"
            "SQL SELECT name FROM items WHERE id = $1 | params=binary rows=0 changes=-1\n"
            "SQL UPDATE items SET name = ? WHERE id = ? | params=- rows=0 changes=1\n"
            "SQL SELECT id FROM items | params=- rows=6 changes=-1\n"
            "SQL SELECT * FROM missing_table | params=- rows=-1 changes=-1 error=ERROR 42P01: relation \"missing_table\" "
            "does not exist sqlstate=42P01\n"
            "SQL PREPARE S_2 AS INSERT INTO items (id, name) VALUES ($1, $2) | params=- rows=-1 changes=-1\n"
            "SQL INSERT INTO items (id, name) VALUES ($1, $2) | params=binary, text rows=0 changes=1\n"
            "SQL INSERT INTO items (id, name) VALUES ($1, $2) | params=binary, text rows=0 changes=1\n"
            "SQL INSERT INTO items (id, name) VALUES ($1, $2) | params=binary, text rows=0 changes=1\n"
            "SQL BEGIN | params=- rows=0 changes=-1\n"
            "SQL SELECT id FROM items ORDER BY id | params=- rows=2 changes=-1\n"
            "SQL SELECT id FROM items ORDER BY id | params=- rows=2 changes=-1\n"
            "SQL SELECT id FROM items ORDER BY id | params=- rows=2 changes=-1\n"
            "SQL COMMIT | params=- rows=0 changes=-1\n");
  set_mode(sql::TextMode::raw);
  got = replay(load("jdbc-0"));
  EXPECT_NE(got.find("SELECT name FROM items WHERE id = $1 | params='2' rows=0"), std::string::npos) << got;
  EXPECT_NE(got.find("VALUES ($1, $2) | params='101', 'b1'"), std::string::npos) << got;
}

TEST_F(PgClientTest, PsqlSimpleQueriesAndCopy) {
  std::string got = replay_all_ways("psql-0");
  EXPECT_EQ(got,
            "CONNECT postgresql://postgres@127.0.0.1:5432/postgres | db=postgres user=postgres host=127.0.0.1 port=5432\n"
            "SQL SELECT ? | params=- rows=1 changes=-1\n"
            "SQL SELECT ? AS x | params=- rows=1 changes=-1\n"
            "SQL SELECT ? | params=- rows=1 changes=-1\n"
            "SQL COPY items (id, name) TO STDOUT | params=- rows=0 changes=9\n"
            "SQL COPY items (id, name) FROM STDIN | params=- rows=0 changes=2\n"
            "SQL SELECT nope | params=- rows=-1 changes=-1 error=ERROR 42703: column \"nope\" does not exist "
            "sqlstate=42703\n");
}

// --- pipelines: siblings, each with its own span ----------------------------------------------------------

namespace {

// One message of a capture, framed by the test itself (not by the parser under test): where it ends in
// the whole conversation, counting the bytes of both directions in replay order.
struct Framed {
  size_t chunk;
  bool sent;
  char type;     // 0: an untyped message (SSLRequest, StartupMessage)
  uint64_t end;  // bytes of the conversation fed when its last byte is
};

std::vector<Framed> frame_capture(const std::vector<Chunk>& chunks) {
  std::vector<Framed> out;
  std::string front, back;
  bool untyped = true, answer = false;
  uint64_t fed = 0;
  for (size_t i = 0; i < chunks.size(); ++i)
    for (char ch : chunks[i].bytes) {
      ++fed;
      bool sent = chunks[i].sent;
      std::string& buf = sent ? front : back;
      buf.push_back(ch);
      if (sent && untyped) {
        if (buf.size() >= 8 && buf.size() == be32(buf.data())) {
          bool ssl = buf.size() == 8 && be32(buf.data() + 4) == kSslRequest;
          untyped = answer = ssl;  // after an SSLRequest: its one-byte answer, then the StartupMessage
          out.push_back({i, true, 0, fed});
          buf.clear();
        }
      } else if (!sent && answer) {
        answer = false;
        out.push_back({i, false, buf[0], fed});
        buf.clear();
      } else if (buf.size() >= 5 && buf.size() == 1 + uint64_t(be32(buf.data() + 1))) {
        out.push_back({i, sent, buf[0], fed});
        buf.clear();
      }
    }
  return out;
}

int depth_of(const Transaction& t, const Step& s) {
  int d = 0;
  for (int32_t p = s.parent; p >= 0 && size_t(p) < t.steps.size() && d < 64; p = t.steps[size_t(p)].parent) ++d;
  return d;
}

}  // namespace

// The write of a capture that carries the most Binds (a driver's batch: asyncpg's executemany, JDBC's
// executeBatch) and the read after it: `n` statements of `text`, each a row of its own beside the others
// — none the parent of the next — that opens at its first message and closes at its own CommandComplete. The
// capture is fed one byte at a time with the clock one nanosecond on per byte, so a row's start and
// elapsed say exactly which bytes opened and closed it.
class PgPipelineTest : public PgClientTest {
 protected:
  void expect_siblings(const std::string& capture, const std::string& text, size_t n) {
    std::vector<Chunk> chunks = load(capture);
    std::vector<Framed> msgs = frame_capture(chunks);
    size_t batch = 0, most = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      size_t b = 0;
      for (const Framed& m : msgs) b += m.chunk == i && m.sent && m.type == 'B';
      if (b > most) most = b, batch = i;
    }
    std::vector<uint64_t> binds, completes;
    for (const Framed& m : msgs) {
      if (m.chunk == batch && m.type == 'B') binds.push_back(m.end);
      if (m.chunk == batch + 1 && !m.sent && m.type == 'C') completes.push_back(m.end);
    }
    ASSERT_EQ(binds.size(), n) << capture;
    ASSERT_EQ(completes.size(), n) << capture;
    // A statement's first message opens its row: the first Bind's statement began at its Parse when no
    // Sync came between (asyncpg: Parse, Describe, Flush, then the batch), else at the Bind (JDBC's Parse
    // had a Sync of its own: a PREPARE row apart).
    for (size_t i = msgs.size(); i-- > 0;) {
      const Framed& m = msgs[i];
      if (!m.sent || m.end >= binds[0]) continue;
      if (m.type == 'P') binds[0] = m.end;
      if (m.type != 'D' && m.type != 'H') break;
    }

    uint64_t t0 = test::FakeClock::mono;
    Transaction* t = begin();
    auto c = conn();
    for (const Chunk& ch : chunks)
      for (char b : ch.bytes) {
        test::FakeClock::advance(1);
        ch.sent ? sent(*c, std::string(1, b)) : received(*c, std::string(1, b));
      }
    EXPECT_FALSE(c->stopped());
    c->on_end("");
    c.reset();
    const Transaction& done = end(t);

    std::vector<const Step*> rows;
    uint64_t sql_ns = 0;
    uint32_t sql_count = 0;
    for (const Step& s : done.steps) {
      if (s.kind != StepKind::SQL) continue;
      sql_ns += s.elapsed_ns;
      ++sql_count;
      EXPECT_EQ(depth_of(done, s), 0) << s.text.view();
      if (s.text.view() == text) rows.push_back(&s);
    }
    ASSERT_EQ(rows.size(), n) << describe(done);
    for (size_t k = 0; k < n; ++k) {
      EXPECT_EQ(rows[k]->parent, -1) << "statement " << k;
      EXPECT_FALSE(rows[k]->open);
      EXPECT_EQ(rows[k]->start_mono_ns, t0 + binds[k]) << "statement " << k;
      EXPECT_EQ(rows[k]->elapsed_ns, completes[k] - binds[k]) << "statement " << k;
      EXPECT_EQ(rows[k]->changes, 1);
    }
    // They overlap: every one was written before the first reply came.
    EXPECT_LT(binds[n - 1], completes[0]);
    EXPECT_EQ(done.totals.sql_ns, sql_ns);
    EXPECT_EQ(done.totals.sql_count, sql_count);
    EXPECT_TRUE(done.summary.empty());
  }
};

TEST_F(PgPipelineTest, AsyncpgExecutemanyRowsAreSiblings) {
  expect_siblings("asyncpg-0", "INSERT INTO items (id, name) VALUES ($1, $2)", 3);
}

TEST_F(PgPipelineTest, JdbcBatchRowsAreSiblings) {
  expect_siblings("jdbc-0", "INSERT INTO items (id, name) VALUES ($1, $2)", 3);
}

// --- what the captures do not show ---------------------------------------------------------------------

TEST_F(PgClientTest, PipelineErrorSkipsToSync) {
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  // Three statements before one Sync; the second fails, the third is skipped by the server.
  sent(*c, parse_msg("", "SELECT 1") + bind_text("", "", {}) + execute_msg() + parse_msg("", "SELECT nope") +
               bind_text("", "", {}) + execute_msg() + parse_msg("", "SELECT 3") + bind_text("", "", {}) +
               execute_msg() + kSync);
  EXPECT_EQ(c->pending(), 10u);
  received(*c, msg('1', "") + msg('2', "") + data_row() + complete_msg("SELECT 1") + error_msg("42703", "no nope") + kReady);
  EXPECT_EQ(c->pending(), 0u);
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL SELECT ? | params=- rows=1 changes=-1\n"
            "SQL SELECT nope | params=- rows=-1 changes=-1 error=ERROR 42703: no nope sqlstate=42703\n"
            "SQL SELECT ? | params=- rows=-1 changes=-1 error=not run: an earlier statement failed sqlstate=-\n");
}

TEST_F(PgClientTest, EachBindShowsItsOwnParameterKinds) {
  // The masked params text is kept from one Bind to the next while the kinds stay the same: a Bind whose
  // kinds differ (a NULL now, one parameter more) shows its own.
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  sent(*c, parse_msg("s", "SELECT * FROM t WHERE a = $1 OR b = $2") + kSync);
  received(*c, msg('1', "") + kReady);
  std::string null_bind = msg('B', cstr("") + cstr("s") + be16s(0) + be16s(2) + be32s(1) + "x" + be32s(0xffffffff) + be16s(0));
  std::string one_bind = msg('B', cstr("") + cstr("s") + be16s(0) + be16s(1) + be32s(1) + "x" + be16s(0));
  for (const std::string& b : {bind_text("", "s", {"1", "2"}), null_bind, bind_text("", "s", {"3", "4"}), one_bind}) {
    sent(*c, b + execute_msg() + kSync);
    received(*c, msg('2', "") + complete_msg("SELECT 0") + kReady);
  }
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL PREPARE s AS SELECT * FROM t WHERE a = $1 OR b = $2 | params=- rows=-1 changes=-1\n"
            "SQL SELECT * FROM t WHERE a = $1 OR b = $2 | params=text, text rows=0 changes=-1\n"
            "SQL SELECT * FROM t WHERE a = $1 OR b = $2 | params=text, null rows=0 changes=-1\n"
            "SQL SELECT * FROM t WHERE a = $1 OR b = $2 | params=text, text rows=0 changes=-1\n"
            "SQL SELECT * FROM t WHERE a = $1 OR b = $2 | params=text rows=0 changes=-1\n");
}

TEST_F(PgClientTest, RowBytesAreTheStatementsOwnStretchOfTheStream) {
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  std::string s1 = parse_msg("", "SELECT 1") + bind_text("", "", {}) + execute_msg();
  std::string s2 = parse_msg("", "SELECT 22") + bind_text("", "", {"x"}) + execute_msg();
  std::string r1 = msg('1', "") + msg('2', "") + data_row() + complete_msg("SELECT 1");
  std::string r2 = msg('1', "") + msg('2', "") + data_row() + data_row() + complete_msg("SELECT 2");
  // One write, one read, as a pipelining driver and a fast server make them; the socket counters then
  // hold the whole call when the rows open and close.
  sent(*c, s1 + s2 + kSync);
  received(*c, r1 + r2 + kReady);
  const Transaction& done = end(t);
  std::vector<const Step*> sql;
  for (const Step& s : done.steps)
    if (s.kind == StepKind::SQL) sql.push_back(&s);
  ASSERT_EQ(sql.size(), 2u);
  // Written: from the row's first message to everything written before its reply ended (the pipeline);
  // read: from what was read when it opened to the end of its CommandComplete.
  EXPECT_EQ(sql[0]->bytes_written, s1.size() + s2.size() + kSync.size());
  EXPECT_EQ(sql[0]->bytes_read, r1.size());
  EXPECT_EQ(sql[1]->bytes_written, s2.size() + kSync.size());
  EXPECT_EQ(sql[1]->bytes_read, r1.size() + r2.size());
  EXPECT_EQ(sql[1]->rows, 2);
}

TEST_F(PgClientTest, ErrorBeforeSyncIsWrittenSkipsUntilIt) {
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  sent(*c, parse_msg("s1", "SELECT nope") + msg('D', "Ss1" + std::string(1, '\0')) + msg('H', ""));
  received(*c, error_msg("42703", "no nope"));
  sent(*c, bind_text("", "s1", {}) + execute_msg() + kSync);  // ignored by the server up to the Sync
  received(*c, kReady);
  sent(*c, parse_msg("", "SELECT 2") + bind_text("", "", {}) + execute_msg() + kSync);
  received(*c, msg('1', "") + msg('2', "") + data_row() + complete_msg("SELECT 1") + kReady);
  EXPECT_FALSE(c->stopped());
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL SELECT nope | params=- rows=-1 changes=-1 error=ERROR 42703: no nope sqlstate=42703\n"
            "SQL SELECT ? | params=- rows=1 changes=-1\n");
}

TEST_F(PgClientTest, PreparedInOneRequestExecutedInAnother) {
  auto c = conn();
  Transaction* t1 = begin();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  sent(*c, parse_msg("by_id", "SELECT * FROM users WHERE id = $1") + kSync);
  received(*c, msg('1', "") + kReady);
  std::string first = describe(end(t1));
  EXPECT_NE(first.find("SQL PREPARE by_id AS SELECT * FROM users WHERE id = $1 | params=- rows=-1"), std::string::npos)
      << first;
  Transaction* t2 = begin();
  set_mode(sql::TextMode::raw);
  sent(*c, bind_text("", "by_id", {"77"}) + execute_msg() + kSync);
  received(*c, msg('2', "") + data_row() + complete_msg("SELECT 1") + kReady);
  EXPECT_EQ(describe(end(t2)), "SQL SELECT * FROM users WHERE id = $1 | params='77' rows=1 changes=-1\n");
}

TEST_F(PgClientTest, StatementMapIsBounded) {
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  for (size_t i = 0; i < PgConn::kMaxStatements + 10; ++i) {
    sent(*c, parse_msg("s" + std::to_string(i), "SELECT " + std::to_string(i)) + kSync);
    received(*c, msg('1', "") + kReady);
  }
  EXPECT_EQ(c->evicted(), 10u);
  EXPECT_EQ(c->statements(), PgConn::kMaxStatements);
  // Closing statements frees their names; the unnamed one never counts against the bound.
  sent(*c, msg('C', "Ss500" + std::string(1, '\0')) + parse_msg("", "SELECT x") + kSync);
  received(*c, msg('3', "") + msg('1', "") + kReady);
  EXPECT_EQ(c->statements(), PgConn::kMaxStatements);
  EXPECT_FALSE(c->stopped());
}

TEST_F(PgClientTest, PasswordsAreNeverKept) {
  set_mode(sql::TextMode::raw);
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, msg('R', be32s(3)));  // cleartext password asked
  sent(*c, msg('p', cstr("hunter2")));
  received(*c, kAuthOk + msg('S', cstr("server_version") + cstr("15")) + msg('K', be32s(1) + be32s(2)) + kReady);
  sent(*c, msg('Q', cstr("SELECT 1")));
  received(*c, msg('T', be16s(0)) + data_row() + complete_msg("SELECT 1") + kReady);
  const Transaction& done = end(t);
  for (const Step& s : done.steps) {
    EXPECT_EQ(s.text.view().find("hunter2"), std::string_view::npos);
    for (const Attr& a : s.attrs) EXPECT_EQ(a.value.find("hunter2"), std::string::npos);
  }
  EXPECT_EQ(describe(done),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL SELECT 1 | params=- rows=1 changes=-1\n");
}

TEST_F(PgClientTest, AuthenticationErrorFailsTheConnectRow) {
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("nobody", "shop"));
  received(*c, msg('E', "SFATAL" + std::string(1, '\0') + "VFATAL" + std::string(1, '\0') + "C28000" +
                            std::string(1, '\0') + "Mrole \"nobody\" does not exist" + std::string(2, '\0')));
  c->on_end("");
  const Transaction& done = end(t);
  EXPECT_EQ(describe(done),
            "CONNECT postgresql://nobody@127.0.0.1:5432/shop | db=shop user=nobody host=127.0.0.1 port=5432 "
            "error=FATAL 28000: role \"nobody\" does not exist sqlstate=28000\n");
}

TEST_F(PgClientTest, SslAcceptedStartsTlsAndTheStartupFollowsInPlaintext) {
  Transaction* t = begin();
  auto c = conn();
  std::string ssl = be32s(8) + be32s(kSslRequest);
  sent(*c, ssl);
  received(*c, "S");
  EXPECT_TRUE(c->tls_started());
  EXPECT_FALSE(c->stopped());
  // The OpenSSL hooks' plaintext.
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  sent(*c, msg('Q', cstr("SELECT 1")));
  received(*c, data_row() + complete_msg("SELECT 1") + kReady);
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL SELECT ? | params=- rows=1 changes=-1\n");
}

TEST_F(PgClientTest, ConnectLabelOfAnIpv4MappedPeer) {
  env.peer = "[::ffff:10.1.2.3]:6432";
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  env.peer = "[fe80::1]:5432";
  auto d = conn();
  sent(*d, startup("app", "shop"));
  received(*d, kAuthOk + kReady);
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@10.1.2.3:6432/shop | db=shop user=app host=10.1.2.3 port=6432\n"
            "CONNECT postgresql://app@[fe80::1]:5432/shop | db=shop user=app host=fe80::1 port=5432\n");
}

TEST_F(PgClientTest, NoticesCountOnTheirRow) {
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  sent(*c, msg('Q', cstr("DROP TABLE IF EXISTS x")));
  std::string notice = msg('N', "SNOTICE" + std::string(1, '\0') + "C00000" + std::string(2, '\0'));
  received(*c, notice + notice + complete_msg("DROP TABLE") + kReady);
  EXPECT_EQ(c->notices(), 2u);
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL DROP TABLE IF EXISTS x | params=- rows=0 changes=-1 notices=2\n");
}

TEST_F(PgClientTest, HugeQueryKeepsItsHeadAndTheStreamGoesOn) {
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  std::string q = "SELECT " + std::string(200000, 'a') + "; SELECT 2";
  sent(*c, msg('Q', cstr(q)));
  received(*c, data_row() + complete_msg("SELECT 1") + data_row() + complete_msg("SELECT 1") + kReady);
  sent(*c, msg('Q', cstr("SELECT 3")));
  received(*c, data_row() + complete_msg("SELECT 1") + kReady);
  EXPECT_FALSE(c->stopped());
  const Transaction& done = end(t);
  std::vector<int64_t> rows;
  for (const Step& s : done.steps)
    if (s.kind == StepKind::SQL) {
      rows.push_back(s.rows);
      EXPECT_LE(s.text.size(), sql::kDefaultMaxText + 3);
    }
  // The cut Query's head holds one statement (its second is past the cap): one row, which the server's
  // second result adds to, then SELECT 3.
  EXPECT_EQ(rows, (std::vector<int64_t>{2, 1}));
}

TEST_F(PgClientTest, StopsOnBadBytesClosesRowsAndCountsOnce) {
  uint64_t before = counters().streams_unparsed.load();
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  sent(*c, msg('Q', cstr("SELECT pg_sleep(1)")));
  std::string bad = std::string("Z") + be32s(2);
  received(*c, bad);
  EXPECT_TRUE(c->stopped());
  received(*c, bad);
  c->on_sent("x", 1);
  EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL SELECT pg_sleep(?) | params=- rows=-1 changes=-1 error=wire protocol not followed sqlstate=-\n");
}

TEST_F(PgClientTest, ReplyMatchingNothingStops) {
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  received(*c, msg('1', ""));  // a ParseComplete for no Parse
  EXPECT_TRUE(c->stopped());
  auto d = conn();
  std::string cancel = be32s(16) + be32s(kCancelRequest) + be32s(1) + be32s(2);
  sent(*d, cancel);
  EXPECT_TRUE(d->stopped());
}

TEST_F(PgClientTest, ConnectionEndClosesOpenRowsWithItsReason) {
  Transaction* t = begin();
  auto c = conn();
  sent(*c, startup("app", "shop"));
  received(*c, kAuthOk + kReady);
  sent(*c, parse_msg("", "SELECT 1") + bind_text("", "", {}) + execute_msg() + kSync);
  c->on_end("connection reset");
  EXPECT_EQ(describe(end(t)),
            "CONNECT postgresql://app@127.0.0.1:5432/shop | db=shop user=app host=127.0.0.1 port=5432\n"
            "SQL SELECT ? | params=- rows=-1 changes=-1 error=connection reset sqlstate=-\n");
}
