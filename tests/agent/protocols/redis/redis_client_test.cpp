// The Redis client parser with the agent's real core: captured conversations of redis-py and redis-cli
// (RESP2 and RESP3, captures/*.jsonl through make_captures.py) fed as the hooks feed them, whole and
// split at every offset, and the rows they leave.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/counters.h"
#include "core/fd_table.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "hints/hint_board.h"
#include "protocols/redis/cache_key.h"
#include "protocols/redis/redis_client.h"
#include "redis_captures.h"
#include "support/test_support.h"

using namespace txray;
using redis_captures::Conversation;

namespace {

Transaction* g_tx = nullptr;
int g_asked = 0;
Transaction* the_tx(ReqRef&) {
  ++g_asked;
  return g_tx;
}

std::string attr(const Step& s, std::string_view k) {
  for (const Attr& a : s.attrs)
    if (a.key == k) return a.value;
  return "<none>";
}

// What a row says, in one line, for comparing runs.
std::string describe(const Step& s) {
  std::string d = std::string(s.text.view()) + " |";
  for (const Attr& a : s.attrs) d += " " + a.key + "=" + a.value;
  d += " | R=" + std::to_string(s.bytes_read) + " W=" + std::to_string(s.bytes_written);
  if (!s.error.empty()) d += " | error=" + s.error;
  return d;
}

struct Played {
  std::vector<Step> rows;
  std::vector<StepSummary> summary;
  Totals totals;
  uint64_t elapsed_sum = 0;  // rows' and summary lines' elapsed
  std::vector<std::string> lines;
};

class RedisClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::FakeClock::install();
    test::Collected::install();
  }
  void TearDown() override {
    test::FakeClock::uninstall();
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
    set_config(Config{});
  }

  // Plays a conversation; chunk `split` (if any) goes in two pieces at `at`, or a byte at a time when
  // bytewise. Each chunk takes 1 us of wall time.
  Played play(const Conversation& c, size_t split = SIZE_MAX, size_t at = 0, bool bytewise = false) {
    g_tx = tx::begin("test", "api");
    tx::make_current(g_tx);
    g_asked = 0;
    FdSlot slot;
    WireEnv env{&slot, "127.0.0.1:6379", nullptr};
    std::unique_ptr<WireClient> cl(redis::make_client(env, the_tx));
    for (size_t i = 0; i < c.size(); ++i) {
      test::FakeClock::advance(1000);
      std::string_view b = c[i].bytes;
      auto feed = [&](std::string_view part) {
        if (part.empty() || cl->stopped()) return;
        if (c[i].sent) cl->on_sent(part.data(), part.size());
        else cl->on_received(part.data(), part.size());
      };
      if (bytewise) {
        for (size_t k = 0; k < b.size(); ++k) feed(b.substr(k, 1));
      } else if (i == split) {
        feed(b.substr(0, at));
        feed(b.substr(at));
      } else {
        feed(b);
      }
    }
    cl->on_end({});
    cl.reset();
    tx::end(g_tx, 200, "");
    g_tx = nullptr;
    return collect();
  }

  Played collect() {
    Played r;
    const Transaction& t = *test::Collected::txs.back();
    for (const Step& s : t.steps)
      if (s.kind == StepKind::REDIS) {
        r.rows.push_back(s);
        r.lines.push_back(describe(s));
        r.elapsed_sum += s.elapsed_ns;
      }
    for (const StepSummary& s : t.summary)
      if (s.kind == StepKind::REDIS) {
        r.summary.push_back(s);
        r.elapsed_sum += s.elapsed_ns;
      }
    r.totals = t.totals;
    return r;
  }
};

TEST_F(RedisClientTest, LooksLikeCommand) {
  for (const auto& conv : redis_captures::kRedisPy) {
    ASSERT_TRUE(conv[0].sent);
    EXPECT_TRUE(redis::looks_like_command(conv[0].bytes.data(), std::min<size_t>(24, conv[0].bytes.size())));
  }
  EXPECT_TRUE(redis::looks_like_command("*1\r\n$4\r\nPING\r\n", 14));
  EXPECT_FALSE(redis::looks_like_command("GET / HTTP/1.1\r\n", 16));
  EXPECT_FALSE(redis::looks_like_command("PING\r\n", 6));  // inline: not taken
  EXPECT_FALSE(redis::looks_like_command("*0\r\n", 4));
  EXPECT_FALSE(redis::looks_like_command("*\r\n$4", 5));
  EXPECT_FALSE(redis::looks_like_command("*1\r\n+OK", 7));
  EXPECT_FALSE(redis::looks_like_command("\x00\x00\x00\x08\x04\xd2\x16\x2f", 8));  // PostgreSQL SSLRequest
  EXPECT_FALSE(redis::looks_like_command("*123456789\r\n$", 13));
}

TEST_F(RedisClientTest, RedisPyRowsOnePerCommand) {
  Played r = play(redis_captures::kRedisPy[0]);
  std::vector<std::string> texts;
  for (const Step& s : r.rows) texts.push_back(std::string(s.text.view()));
  std::vector<std::string> want = {
      "SET item:?", "GET item:?", "GET missing:?", "INCRBY counter:?", "INCRBY counter:?", "INCRBY counter:?",
      "INCRBY counter:?", "INCRBY counter:?", "MULTI", "SET a:?", "GET a:?", "EXEC", "LPUSH item:?",
      "HSET user:?", "HGETALL user:?", "DEL list:?", "RPUSH list:?", "BLPOP list:?", "SELECT", "SELECT", "SET k:?"};
  EXPECT_EQ(texts, want);
  ASSERT_EQ(r.rows.size(), want.size());
  // SET item:42 'hello world': the command's bytes written, +OK read; no value anywhere
  EXPECT_EQ(r.rows[0].bytes_written, 44u);
  EXPECT_EQ(r.rows[0].bytes_read, 5u);
  EXPECT_EQ(attr(r.rows[0], "command"), "SET");
  EXPECT_EQ(attr(r.rows[0], "reply"), "+");
  EXPECT_EQ(attr(r.rows[0], "status"), "OK");
  EXPECT_EQ(attr(r.rows[1], "reply"), "$");
  EXPECT_EQ(r.rows[1].bytes_read, 18u);
  EXPECT_EQ(attr(r.rows[2], "reply"), "nil");
  for (const std::string& l : r.lines) EXPECT_EQ(l.find("hello"), std::string::npos) << l;
  // the pipeline of 5 was written in one write: 5 rows, each answered by its own ":1"
  for (int i = 3; i < 8; ++i) {
    EXPECT_EQ(attr(r.rows[i], "reply"), ":");
    EXPECT_EQ(r.rows[i].bytes_read, 4u);
  }
  // MULTI / EXEC
  EXPECT_EQ(attr(r.rows[9], "status"), "QUEUED");
  EXPECT_EQ(attr(r.rows[10], "status"), "QUEUED");
  EXPECT_EQ(attr(r.rows[11], "reply"), "*");
  EXPECT_EQ(attr(r.rows[11], "elements"), "2");
  // -WRONGTYPE
  EXPECT_EQ(r.rows[12].error.rfind("WRONGTYPE Operation against a key", 0), 0u) << r.rows[12].error;
  EXPECT_EQ(attr(r.rows[13], "args"), "5");
  EXPECT_EQ(attr(r.rows[14], "elements"), "4");
  // SELECT's db, and the db of the rows after it
  EXPECT_EQ(attr(r.rows[18], "db"), "2");
  EXPECT_EQ(attr(r.rows[19], "db"), "3");
  EXPECT_EQ(attr(r.rows[20], "db"), "3");
  EXPECT_EQ(attr(r.rows[17], "db"), "<none>");
  // each row's elapsed is in the call totals, once
  EXPECT_EQ(r.totals.call_count, want.size());
  EXPECT_EQ(r.totals.call_ns, r.elapsed_sum);
  // rows group by command + key pattern
  EXPECT_NE(r.rows[1].fingerprint, r.rows[2].fingerprint);
  EXPECT_EQ(r.rows[3].fingerprint, r.rows[7].fingerprint);
  EXPECT_NE(r.rows[0].fingerprint, r.rows[1].fingerprint);
  EXPECT_EQ(r.rows[3].fingerprint, cachekey::fingerprint("INCRBY counter:?"));
  // one statement_tx() per write that started commands
  size_t writes = 0;
  for (const auto& ch : redis_captures::kRedisPy[0]) writes += ch.sent;
  EXPECT_EQ(size_t(g_asked), writes);
}

// Found by fuzzing (agent_fuzz_redis_conn): a command cut short by bytes that are not RESP kept the bytes
// of its last write only when the write ended before them, so its row's bytes depended on where the
// program's writes were split.
TEST_F(RedisClientTest, ACommandCutShortKeepsItsBytesHoweverTheWritesSplit) {
  const std::string long_len = "$" + std::string(30, '1') + "\r\n";  // a bulk length line past its bound
  const Conversation cases[] = {
      {{true, "*2\r\n$3\r\nGET\r\n$3\r\nabc\rX"}},  // no '\n' after the argument's '\r'
      {{true, std::string_view("*2\r\n$3\r\nGET\r\n")}, {true, long_len}},
  };
  const uint64_t want[] = {21, 13 + 24};  // up to the byte that is not RESP; a line up to its bound
  for (size_t k = 0; k < 2; ++k) {
    uint64_t before = counters().streams_unparsed.load();
    Played whole = play(cases[k]);
    ASSERT_EQ(whole.rows.size(), 1u) << k;
    EXPECT_EQ(whole.rows[0].bytes_written, want[k]) << k;
    EXPECT_EQ(whole.rows[0].error, "wire protocol not followed (not a RESP command)") << k;
    EXPECT_EQ(counters().streams_unparsed.load() - before, 1u) << k;
    Played bytes = play(cases[k], SIZE_MAX, 0, true);
    EXPECT_EQ(bytes.lines, whole.lines) << k;
    for (size_t at = 1; at < cases[k][0].bytes.size(); ++at) EXPECT_EQ(play(cases[k], 0, at).lines, whole.lines) << k;
  }
}

// Found by fuzzing (agent_fuzz_redis_conn): a reply read while its command was still being written
// closed the command's row, and the command's last bytes then belonged to no row.
TEST_F(RedisClientTest, AReplyBeforeItsCommandIsWholeStopsTheFollowing) {
  const Conversation c = {{true, "*3\r\n$3\r\nSET\r\n$3\r\nk:1\r\n$5\r\nhel"},
                          {false, "+OK\r\n"},
                          {true, "lo\r\n"}};
  uint64_t before = counters().streams_unparsed.load();
  Played r = play(c);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].error, "wire protocol not followed (a reply before its command was written)");
  EXPECT_EQ(r.rows[0].bytes_written, 29u);  // what was written of it when the reply came
  EXPECT_EQ(counters().streams_unparsed.load() - before, 1u);
  EXPECT_EQ(play(c, SIZE_MAX, 0, true).lines, r.lines);
}

TEST_F(RedisClientTest, EverySplitGivesTheSameRows) {
  std::vector<const Conversation*> all;
  for (const auto* set : {&redis_captures::kRedisPy, &redis_captures::kRedisCli, &redis_captures::kRedisCliResp3,
                          &redis_captures::kRedisCliPipe})
    for (const auto& c : *set) all.push_back(&c);
  for (const Conversation* c : all) {
    Played whole = play(*c);
    ASSERT_FALSE(whole.rows.empty());
    Played bytes = play(*c, SIZE_MAX, 0, true);
    EXPECT_EQ(bytes.lines, whole.lines);
    for (size_t i = 0; i < c->size(); ++i)
      for (size_t at = 1; at < (*c)[i].bytes.size(); ++at) {
        Played r = play(*c, i, at);
        ASSERT_EQ(r.lines, whole.lines) << "chunk " << i << " split at " << at;
      }
  }
}

TEST_F(RedisClientTest, AuthIsNeverRecordedAndPubSubMessagesAreCounted) {
  Played r = play(redis_captures::kRedisPy[1]);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].text.view(), "AUTH");
  EXPECT_FALSE(r.rows[0].error.empty());
  EXPECT_EQ(r.rows[1].text.view(), "SUBSCRIBE news:?");
  EXPECT_EQ(r.rows[2].text.view(), "UNSUBSCRIBE");
  // three messages between the subscription and the next command: counted on that command's row
  EXPECT_EQ(attr(r.rows[2], "messages"), "3");
  for (const std::string& l : r.lines) {
    EXPECT_EQ(l.find("hunter2"), std::string::npos) << l;
    EXPECT_EQ(l.find("m1"), std::string::npos) << l;
  }
  EXPECT_EQ(r.totals.call_count, 3u);
}

TEST_F(RedisClientTest, Resp3Replies) {
  Played a = play(redis_captures::kRedisCliResp3[0]);
  ASSERT_EQ(a.rows.size(), 2u);
  EXPECT_EQ(a.rows[0].text.view(), "HELLO");  // nothing after HELLO is looked at (it may carry AUTH)
  EXPECT_EQ(attr(a.rows[0], "reply"), "%");
  EXPECT_EQ(attr(a.rows[0], "elements"), "7");
  EXPECT_EQ(a.rows[1].text.view(), "HGETALL user:?");
  EXPECT_EQ(attr(a.rows[1], "elements"), "2");
  Played b = play(redis_captures::kRedisCliResp3[1]);
  ASSERT_EQ(b.rows.size(), 2u);
  EXPECT_EQ(attr(b.rows[1], "reply"), "nil");
  Played c = play(redis_captures::kRedisCliResp3[2]);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(attr(c.rows[1], "reply"), "~");
  EXPECT_EQ(attr(c.rows[1], "elements"), "0");
}

TEST_F(RedisClientTest, PushFramesAndAttributesAreNoReplies) {
  Conversation c = {
      {true, "*2\r\n$3\r\nGET\r\n$6\r\nuser:1\r\n"},
      // a client-tracking invalidation arrives before the reply, then an attribute before the reply
      {false, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nuser:2\r\n"},
      {false, "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n$3\r\nabc\r\n"},
      {true, "*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nch:1\r\n"},
      {false, ">3\r\n$9\r\nsubscribe\r\n$4\r\nch:1\r\n:1\r\n"},
      {false, ">3\r\n$7\r\nmessage\r\n$4\r\nch:1\r\n$5\r\nhello\r\n>3\r\n$7\r\nmessage\r\n$4\r\nch:1\r\n$1\r\nx\r\n"},
      {true, "*1\r\n$4\r\nPING\r\n"},
      {false, "+PONG\r\n"},
  };
  Played r = play(c);
  ASSERT_EQ(r.rows.size(), 3u) << ::testing::PrintToString(r.lines);
  EXPECT_EQ(r.rows[0].text.view(), "GET user:?");
  EXPECT_EQ(attr(r.rows[0], "reply"), "$");
  EXPECT_EQ(r.rows[0].bytes_read, c[2].bytes.size());  // the push is not the reply's; the attribute is
  EXPECT_EQ(attr(r.rows[0], "messages"), "1");          // the invalidation
  EXPECT_EQ(attr(r.rows[1], "reply"), ">");
  EXPECT_EQ(attr(r.rows[2], "messages"), "2");
  EXPECT_EQ(attr(r.rows[2], "status"), "PONG");
  EXPECT_TRUE(r.rows[2].error.empty());
}

TEST_F(RedisClientTest, BlockingCommandWaitIsTheRowsTime) {
  g_tx = tx::begin("test", "api");
  tx::make_current(g_tx);
  FdSlot slot;
  WireEnv env{&slot, "127.0.0.1:6379", nullptr};
  std::unique_ptr<WireClient> cl(redis::make_client(env, the_tx));
  std::string cmd = "*3\r\n$5\r\nBLPOP\r\n$6\r\nlist:9\r\n$1\r\n5\r\n";
  cl->on_sent(cmd.data(), cmd.size());
  test::FakeClock::advance(250'000'000);
  std::string rep = "*2\r\n$6\r\nlist:9\r\n$1\r\nq\r\n";
  cl->on_received(rep.data(), rep.size());
  tx::end(g_tx, 200, "");
  Played r = collect();
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].elapsed_ns, 250'000'000u);
  EXPECT_EQ(r.totals.call_ns, 250'000'000u);
}

// 100 commands written in one write and answered in one read, in a transaction of 20 rows at most:
// the rows past the limit fold into a summary line; counts and times add up exactly.
TEST_F(RedisClientTest, PipelineOf100FoldsWithExactTotals) {
  Config cfg;
  cfg.max_steps = 20;
  set_config(cfg);
  Conversation c;
  std::string cmds, reps;
  for (int i = 0; i < 100; ++i) {
    std::string k = "job:" + std::to_string(i);
    cmds += "*2\r\n$3\r\nGET\r\n$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
  }
  c.push_back({true, cmds});
  // replies one at a time, 1 us apart, so every row has an elapsed of its own
  std::vector<std::string> one(100);
  for (int i = 0; i < 100; ++i) {
    one[i] = i % 3 ? "$1\r\nv\r\n" : "$-1\r\n";
    c.push_back({false, one[i]});
  }
  Played r = play(c);
  uint64_t counted = r.rows.size();
  for (const StepSummary& s : r.summary) counted += s.count;
  EXPECT_EQ(counted, 100u);
  EXPECT_FALSE(r.summary.empty());
  EXPECT_EQ(r.totals.call_count, 100u);
  EXPECT_EQ(r.totals.call_ns, r.elapsed_sum);
  ASSERT_EQ(r.summary.size(), 1u);  // one pattern: GET job:?
  EXPECT_EQ(r.summary[0].fingerprint, cachekey::fingerprint("GET job:?"));
}

// redis-cli --pipe writes "\r\n" before the ECHO it closes the input with (an empty inline command the
// server skips without a reply): the stream goes on, every command gets its own reply, and the blank
// line's two bytes are no command's.
TEST_F(RedisClientTest, RedisCliPipeBlankLineBeforeItsEcho) {
  uint64_t before = counters().streams_unparsed.load();
  const Conversation& c = redis_captures::kRedisCliPipe[0];
  Played r = play(c);
  EXPECT_EQ(counters().streams_unparsed.load(), before);
  std::vector<std::string> texts;
  for (const Step& s : r.rows) texts.push_back(std::string(s.text.view()));
  EXPECT_EQ(texts, (std::vector<std::string>{"SET bulk:?", "SET bulk:?", "GET bulk:?", "INCR bulk:?", "ECHO"}));
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(attr(r.rows[2], "reply"), "$");
  EXPECT_EQ(r.rows[3].error, "ERR value is not an integer or out of range");
  EXPECT_EQ(attr(r.rows[4], "reply"), "$");
  uint64_t w = 0, rd = 0;
  for (const Step& s : r.rows) {
    w += s.bytes_written;
    rd += s.bytes_read;
    if (&s != &r.rows[3]) {
      EXPECT_TRUE(s.error.empty()) << s.error;
    }
  }
  EXPECT_EQ(w, c[0].bytes.size() - 2);
  EXPECT_EQ(rd, c[1].bytes.size());
  // a blank line alone, a lone '\n', and a '\r' that no '\n' follows
  for (const Conversation& ok : std::vector<Conversation>{{{true, "\r\n\n*1\r\n$4\r\nPING\r\n"}, {false, "+PONG\r\n"}}}) {
    Played p = play(ok);
    ASSERT_EQ(p.rows.size(), 1u);
    EXPECT_EQ(p.rows[0].bytes_written, 14u);
    EXPECT_TRUE(p.rows[0].error.empty());
  }
  before = counters().streams_unparsed.load();
  play({{true, "*1\r\n$4\r\nPING\r\n\r*1\r\n"}});
  EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
}

TEST_F(RedisClientTest, BytesNotUnderstoodStopFollowingAndCloseTheRows) {
  uint64_t before = counters().streams_unparsed.load();
  Conversation c = {
      {true, "*2\r\n$3\r\nGET\r\n$3\r\nk:1\r\n*2\r\n$3\r\nGET\r\n$3\r\nk:2\r\n"},
      {false, "HTTP/1.1 200 OK\r\n\r\n"},
      {true, "*1\r\n$4\r\nPING\r\n"},
  };
  Played r = play(c);
  ASSERT_EQ(r.rows.size(), 2u);
  for (const Step& s : r.rows) EXPECT_EQ(s.error.rfind("wire protocol not followed", 0), 0u) << s.error;
  EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
  EXPECT_EQ(r.totals.call_count, 2u);

  // a reply to no command; an inline command; a bulk without its CRLF; nesting past the bound
  std::string deep;
  for (int i = 0; i < 70; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  for (const Conversation& bad : std::vector<Conversation>{
           {{false, "+OK\r\n"}},
           {{true, "*1\r\n$4\r\nPING\r\n"}, {true, "PING\r\n"}},
           {{true, "*1\r\n$4\r\nPINGxx"}},
           {{true, "*1\r\n$4\r\nPING\r\n"}, {false, deep}},
           {{true, "*1\r\n$-5\r\n"}},
       }) {
    before = counters().streams_unparsed.load();
    Played b = play(bad);
    EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
    for (const Step& s : b.rows) EXPECT_FALSE(s.error.empty());
  }
}

TEST_F(RedisClientTest, ClosedBeforeTheReply) {
  Conversation c = {{true, "*2\r\n$3\r\nGET\r\n$3\r\nk:1\r\n"}};
  Played r = play(c);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].error, "connection closed before the reply");
}

TEST_F(RedisClientTest, NoTransactionNoRowsButTheStreamIsStillFollowed) {
  g_tx = nullptr;
  FdSlot slot;
  WireEnv env{&slot, "127.0.0.1:6379", nullptr};
  std::unique_ptr<WireClient> cl(redis::make_client(env, [](ReqRef&) -> Transaction* { return g_tx; }));
  std::string a = "*2\r\n$3\r\nGET\r\n$3\r\nk:1\r\n";
  cl->on_sent(a.data(), a.size());
  Transaction* t = tx::begin("test", "api");
  tx::make_current(t);
  g_tx = t;
  std::string b = "*2\r\n$3\r\nGET\r\n$3\r\nk:2\r\n";
  cl->on_sent(b.data(), b.size());
  std::string rep = "$1\r\na\r\n$1\r\nb\r\n";
  cl->on_received(rep.data(), rep.size());
  EXPECT_FALSE(cl->stopped());
  tx::end(t, 200, "");
  Played r = collect();
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].text.view(), "GET k:?");
  EXPECT_EQ(r.rows[0].bytes_read, 7u);  // its own reply, the second one
  g_tx = nullptr;
}

TEST(CacheKey, Patterns) {
  auto m = [](std::string_view k) {
    std::string o;
    cachekey::append(o, k, true);
    return o;
  };
  EXPECT_EQ(m("item:42"), "item:?");
  EXPECT_EQ(m("user:1001:profile"), "user:?:profile");
  EXPECT_EQ(m("session:3f2a9c0d11aa4b7e"), "session:?");
  EXPECT_EQ(m("order:6f1c2b8e-1d2a-4c3b-9e8f-0a1b2c3d4e5f:lines"), "order:?:lines");
  EXPECT_EQ(m("cache:v2:page"), "cache:v?:page");
  EXPECT_EQ(m("deadbeef"), "deadbeef");  // hex letters only: a word
  // random tokens are ids, whole; names with a number in them are not
  EXPECT_EQ(m("sess:Cs87idLqb8ZIyE49eOHJDiDLKj"), "sess:?");
  EXPECT_EQ(m("k3j4h5k6j7h8g9f0d1s2"), "?");
  EXPECT_EQ(m("user42profile"), "user?profile");
  EXPECT_EQ(m("Page2Title"), "Page?Title");
  EXPECT_EQ(m("ThisIsACamelCaseKeyName"), "ThisIsACamelCaseKeyName");
  EXPECT_EQ(m("a\x01" "b\\"), "a\\x01b\\x5c");
  EXPECT_EQ(m(std::string(300, 'k')).size(), 256u + std::string("…").size());
  std::string raw;
  cachekey::append(raw, "item:42", false);
  EXPECT_EQ(raw, "item:42");
}

TEST(CacheKey, RawSetting) {
  auto env = [](std::initializer_list<std::pair<const char*, const char*>> kv) {
    static std::vector<std::pair<std::string, std::string>> vars;
    vars.clear();
    for (auto& [k, v] : kv) vars.emplace_back(k, v);
    return +[](const char* k) -> const char* {
      for (auto& [n, v] : vars)
        if (n == k) return v.c_str();
      return nullptr;
    };
  };
  EXPECT_FALSE(cachekey::parse_raw(env({})));
  EXPECT_TRUE(cachekey::parse_raw(env({{"TXRAY_CACHE_KEYS", "raw"}})));
  EXPECT_TRUE(cachekey::parse_raw(env({{"TXRAY_SQL", "raw"}})));
  EXPECT_TRUE(cachekey::parse_raw(env({{"TXRAY_VALUES", "raw"}})));
  EXPECT_FALSE(cachekey::parse_raw(env({{"TXRAY_CACHE_KEYS", "mask"}, {"TXRAY_SQL", "raw"}})));
}

}  // namespace

// A runtime's owner list (hints/hint_board.h): the commands of one write get an owner each, in order,
// by their number on the connection; a list for another socket, or numbering other commands, names
// nothing, and a command it does not name keeps the write's rules.
TEST_F(RedisClientTest, ListedOwnersNameOneCommandEach) {
  constexpr int kSock = 3777, kOther = 3778;
  FdSlot* slot = fds::get(kSock);
  ASSERT_TRUE(slot && fds::get(kOther));
  alignas(8) static char board[hint::board::kHeader + 16 * 8 + hint::board::kListHeader + 8 * 8];
  memset(board, 0, sizeof board);
  ASSERT_FALSE(hint::board::attach(board, sizeof board - 8, 16, 8));  // one entry short
  ASSERT_TRUE(hint::board::attach(board, sizeof board, 16, 8));
  int32_t* list = reinterpret_cast<int32_t*>(board + hint::board::kHeader + 16 * 8);
  auto give = [&](int fd, int32_t first, std::vector<std::pair<int32_t, int32_t>> owners) {
    list[0] = fd;
    list[2] = first;
    for (size_t i = 0; i < owners.size(); ++i) list[4 + 2 * i] = owners[i].first, list[5 + 2 * i] = owners[i].second;
    list[1] = int32_t(owners.size());
  };
  static std::vector<ReqRef> asked;
  asked.clear();
  WireEnv env{slot, "127.0.0.1:6379", nullptr};
  std::unique_ptr<WireClient> cl(redis::make_client(env, [](ReqRef& r) -> Transaction* {
    asked.push_back(r);
    return nullptr;
  }));
  std::string get = "*2\r\n$3\r\nGET\r\n$3\r\nk:1\r\n";
  // A write as the dispatch feeds it (http_out.cpp, pass_listed_owners): the socket's listed owners
  // first, then the bytes.
  auto send = [&](const char* p, size_t len) {
    ReqRef owners[128];
    uint32_t first = 0;
    size_t k = hint::board::take_list(slot, owners, cl->max_listed_owners(), &first);
    if (k) cl->on_listed_owners(owners, k, first);
    cl->on_sent(p, len);
  };
  // commands 0-2 in one write: a request that is not in flight (nobody's, never a guess), one not named
  // (the write's rule: the connection's owner, none here), one outside any request
  give(kSock, 0, {{700, 1}, {0, 0}, {-1, -1}});
  std::string three = get + get + get;
  send(three.data(), three.size());
  EXPECT_EQ(list[1], 0);  // taken
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0].fd, 700);
  EXPECT_EQ(asked[0].txid, ~0ull);
  EXPECT_FALSE(asked[1].valid());
  EXPECT_EQ(asked[2].txid, ~0ull);
  // another socket's list is left for it; one that numbers commands already written names nothing
  give(kOther, 3, {{701, 1}});
  send(get.data(), get.size());
  EXPECT_EQ(list[1], 1);
  give(kSock, 1, {{702, 1}});
  send(get.data(), get.size());
  ASSERT_EQ(asked.size(), 5u);
  EXPECT_FALSE(asked[3].valid());
  EXPECT_FALSE(asked[4].valid());
  // a list for commands 5 and 6, the first one split across writes; a count past the list is refused
  give(kSock, 5, {{703, 1}, {704, 1}});
  send(get.data(), 5);
  std::string rest = get.substr(5) + get;
  send(rest.data(), rest.size());
  ASSERT_EQ(asked.size(), 7u);
  EXPECT_EQ(asked[5].fd, 703);
  EXPECT_EQ(asked[6].fd, 704);
  give(kSock, 7, {{705, 1}});
  list[1] = 9;
  send(get.data(), get.size());
  ASSERT_EQ(asked.size(), 8u);
  EXPECT_FALSE(asked[7].valid());
  EXPECT_EQ(list[1], 9);
  hint::board::clear(kSock);  // the socket is closed: its list goes
  EXPECT_EQ(list[1], 0);
  hint::board::detach();
  cl->on_end({});
}
