// The memcached client parser with the agent's real core: captured conversations of pymemcache,
// libmemcached's tools (memccp, memccat, memcrm, memcstat) and meta commands against memcached 1.6.18
// (captures/*.jsonl through ../redis/make_captures.py), whole and split at every offset.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/counters.h"
#include "core/fd_table.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "memcached_captures.h"
#include "protocols/memcached/memcached_client.h"
#include "protocols/redis/cache_key.h"
#include "support/test_support.h"

using namespace txray;
using memcached_captures::Conversation;

namespace {

Transaction* g_tx = nullptr;
Transaction* the_tx(ReqRef&) { return g_tx; }

std::string attr(const Step& s, std::string_view k) {
  for (const Attr& a : s.attrs)
    if (a.key == k) return a.value;
  return "<none>";
}

std::string describe(const Step& s) {
  std::string d = std::string(s.text.view()) + " |";
  for (const Attr& a : s.attrs) d += " " + a.key + "=" + a.value;
  d += " | R=" + std::to_string(s.bytes_read) + " W=" + std::to_string(s.bytes_written);
  if (!s.error.empty()) d += " | error=" + s.error;
  return d;
}

struct Played {
  std::vector<Step> rows;
  Totals totals;
  uint64_t elapsed_sum = 0;
  std::vector<std::string> lines;
};

class MemcachedClientTest : public ::testing::Test {
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

  Played play(const Conversation& c, size_t split = SIZE_MAX, size_t at = 0, bool bytewise = false) {
    g_tx = tx::begin("test", "api");
    tx::make_current(g_tx);
    FdSlot slot;
    WireEnv env{&slot, "127.0.0.1:11211", nullptr};
    std::unique_ptr<WireClient> cl(memcached::make_client(env, the_tx));
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
    Played r;
    const Transaction& t = *test::Collected::txs.back();
    for (const Step& s : t.steps)
      if (s.kind == StepKind::MEMCACHED) {
        r.rows.push_back(s);
        r.lines.push_back(describe(s));
        r.elapsed_sum += s.elapsed_ns;
      }
    for (const StepSummary& s : t.summary)
      if (s.kind == StepKind::MEMCACHED) r.elapsed_sum += s.elapsed_ns;
    r.totals = t.totals;
    return r;
  }
};

TEST_F(MemcachedClientTest, LooksLikeCommand) {
  for (const char* s : {"get item:42\r\n", "set k 0 0 1\r\n", "mg k v\r\n", "version\r\n", "stats \r\n", "mn\r\n",
                        "flush_all\r\n", "gat 10 k\r\n"})
    EXPECT_TRUE(memcached::looks_like_command(s, strlen(s))) << s;
  for (const char* s : {"GET / HTTP/1.1\r\n", "getx k\r\n", "get", "*1\r\n$4\r\nPING\r\n", "\x80\x00\x00\x05", "Get k\r\n",
                        "version"})
    EXPECT_FALSE(memcached::looks_like_command(s, strlen(s))) << s;
}

TEST_F(MemcachedClientTest, PymemcacheRows) {
  Played r = play(memcached_captures::kPymemcacheAndMeta[0]);
  std::vector<std::string> texts;
  for (const Step& s : r.rows) texts.push_back(std::string(s.text.view()));
  std::vector<std::string> want = {"set item:?", "get item:?", "get missing:?", "get item:?", "set nr:?",
                                   "add item:?", "delete item:?", "set n:?", "incr n:?", "decr n:?",
                                   "touch n:?", "version"};
  ASSERT_EQ(texts, want);
  EXPECT_EQ(attr(r.rows[0], "noreply"), "1");
  EXPECT_EQ(r.rows[0].bytes_written, 41u);  // "set item:42 0 0 11 noreply\r\n" + data + "\r\n"
  EXPECT_EQ(r.rows[0].bytes_read, 0u);
  EXPECT_EQ(attr(r.rows[1], "result"), "hit");
  EXPECT_EQ(attr(r.rows[1], "hits"), "1");
  EXPECT_EQ(r.rows[1].bytes_read, 38u);
  EXPECT_EQ(attr(r.rows[2], "result"), "miss");
  EXPECT_EQ(attr(r.rows[3], "keys"), "3");
  EXPECT_EQ(attr(r.rows[3], "hits"), "1");
  EXPECT_EQ(attr(r.rows[3], "result"), "partial");
  EXPECT_EQ(attr(r.rows[5], "result"), "NOT_STORED");
  EXPECT_EQ(attr(r.rows[6], "result"), "DELETED");
  EXPECT_EQ(attr(r.rows[8], "result"), "ok");  // incr's new value is not kept
  EXPECT_EQ(attr(r.rows[9], "result"), "NOT_FOUND");
  EXPECT_EQ(attr(r.rows[10], "result"), "TOUCHED");
  for (const std::string& l : r.lines) {
    EXPECT_EQ(l.find("hello"), std::string::npos) << l;
    EXPECT_EQ(l.find("result=15"), std::string::npos) << l;
  }
  for (const Step& s : r.rows) EXPECT_TRUE(s.error.empty()) << describe(s);
  EXPECT_EQ(r.totals.call_count, want.size());
  EXPECT_EQ(r.totals.call_ns, r.elapsed_sum);
  EXPECT_EQ(r.rows[1].fingerprint, r.rows[3].fingerprint);
  EXPECT_EQ(r.rows[1].fingerprint, cachekey::fingerprint("get item:?"));
}

TEST_F(MemcachedClientTest, MetaCommands) {
  uint64_t before = counters().streams_unparsed.load();
  Played r = play(memcached_captures::kPymemcacheAndMeta[1]);
  std::vector<std::string> texts;
  for (const Step& s : r.rows) texts.push_back(std::string(s.text.view()));
  // "bogus command" is no memcached command: its row ends the parsing of the connection
  std::vector<std::string> want = {"ms meta:?", "mg meta:?", "mg meta:?", "mg meta:?", "mg meta:?",
                                   "mn",        "md meta:?", "ma counter:?", ""};
  ASSERT_EQ(texts, want) << ::testing::PrintToString(r.lines);
  EXPECT_EQ(attr(r.rows[0], "result"), "HD");
  EXPECT_EQ(attr(r.rows[1], "result"), "hit");
  EXPECT_EQ(r.rows[1].bytes_read, 20u);
  EXPECT_EQ(attr(r.rows[2], "result"), "miss");
  // Quiet: the first mg missed (no reply), the second hit; the VA echoes neither k nor O, so it is
  // counted for the oldest quiet command, and the other one ends quiet at mn's MN.
  EXPECT_EQ(attr(r.rows[3], "quiet"), "1");
  EXPECT_EQ(attr(r.rows[3], "result"), "hit");
  EXPECT_EQ(attr(r.rows[4], "result"), "quiet");
  EXPECT_EQ(r.rows[5].bytes_read, 4u);
  EXPECT_EQ(attr(r.rows[6], "result"), "HD");
  EXPECT_EQ(attr(r.rows[7], "result"), "VA");
  EXPECT_EQ(r.rows[8].error.rfind("wire protocol not followed", 0), 0u);
  EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
}

TEST_F(MemcachedClientTest, QuietCommandsMatchedByTheirEchoedKey) {
  Conversation c = {
      {true, "mg a:1 v k q\r\nmg b:2 v k q\r\nmg c:3 v k\r\nmn\r\n"},
      {false, "VA 1 kb:2\r\nx\r\nEN\r\nMN\r\n"},
  };
  Played r = play(c);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(attr(r.rows[0], "result"), "quiet");  // a:1 missed: no reply
  EXPECT_EQ(attr(r.rows[1], "result"), "hit");    // b:2's own VA
  EXPECT_EQ(attr(r.rows[2], "result"), "miss");
  EXPECT_EQ(r.rows[3].text.view(), "mn");
  EXPECT_TRUE(r.rows[3].error.empty());
}

TEST_F(MemcachedClientTest, LibmemcachedTools) {
  std::vector<std::string> all;
  for (const auto& c : memcached_captures::kLibmemcachedTools) {
    Played r = play(c);
    for (const Step& s : r.rows) all.push_back(describe(s));
  }
  ASSERT_EQ(all.size(), 10u) << ::testing::PrintToString(all);
  EXPECT_EQ(all[0], "set f.txt | command=set result=STORED | R=8 W=33");
  EXPECT_EQ(all[1], "quit | command=quit | R=0 W=6");  // no reply: the row ends with its write
  EXPECT_EQ(all[2], "get f.txt | command=get hits=1 result=hit | R=38 W=11");
  EXPECT_EQ(all[3], "get item:? | command=get hits=0 result=miss | R=5 W=13");
  EXPECT_EQ(all[5], "delete f.txt | command=delete result=DELETED | R=9 W=14");
  EXPECT_EQ(all[7], "version | command=version result=VERSION | R=16 W=9");
  // memcstat: STAT lines until END, all of them the reply's bytes
  size_t stats_reply = 0;
  for (const auto& ch : memcached_captures::kLibmemcachedTools[3])
    if (!ch.sent) stats_reply += ch.bytes.size();
  EXPECT_EQ(all[8], "stats | command=stats | R=" + std::to_string(stats_reply - 16) + " W=8");
  for (const std::string& l : all) EXPECT_EQ(l.find("error"), std::string::npos) << l;
}

// memcslap's keys are random base62 words ("b9ii0HXbESxx38P3yLBRl0Eu5…"): each one masked as a whole, so
// its sets and gets are two patterns and fold past the step limit into two summary lines, not one line
// per key (which a summary line per key made quadratic in a long run).
TEST_F(MemcachedClientTest, MemcslapRandomKeysAreOnePattern) {
  std::vector<std::string> texts;
  uint64_t fp_set = 0, fp_get = 0;
  for (const auto& c : memcached_captures::kMemcslap) {
    Played r = play(c);
    for (const Step& s : r.rows) {
      texts.push_back(std::string(s.text.view()));
      EXPECT_TRUE(s.error.empty()) << s.error;
      if (s.text.view() == "set ?") fp_set = s.fingerprint;
      if (s.text.view() == "get ?") fp_get = s.fingerprint;
    }
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"set ?", "set ?", "set ?", "get ?", "get ?", "get ?", "quit"}));
  EXPECT_EQ(fp_set, cachekey::fingerprint("set ?"));
  EXPECT_EQ(fp_get, cachekey::fingerprint("get ?"));
}

TEST_F(MemcachedClientTest, EverySplitGivesTheSameRows) {
  for (const auto* set : {&memcached_captures::kPymemcacheAndMeta, &memcached_captures::kLibmemcachedTools})
    for (const Conversation& c : *set) {
      Played whole = play(c);
      ASSERT_FALSE(whole.rows.empty());
      Played bytes = play(c, SIZE_MAX, 0, true);
      EXPECT_EQ(bytes.lines, whole.lines);
      for (size_t i = 0; i < c.size(); ++i)
        for (size_t at = 1; at < c[i].bytes.size(); ++at) {
          Played r = play(c, i, at);
          ASSERT_EQ(r.lines, whole.lines) << "chunk " << i << " split at " << at;
        }
    }
}

TEST_F(MemcachedClientTest, ServerErrorsAndGarbage) {
  Conversation c = {
      {true, "set big:1 0 0 3\r\nabc\r\nget k:1\r\n"},
      {false, "SERVER_ERROR out of memory storing object\r\nCLIENT_ERROR bad command line format\r\n"},
  };
  Played r = play(c);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].error, "SERVER_ERROR out of memory storing object");
  EXPECT_EQ(r.rows[1].error, "CLIENT_ERROR bad command line format");
  for (const Conversation& bad : std::vector<Conversation>{
           {{false, "STORED\r\n"}},
           {{true, "set k 0 0 3\r\nabcdef\r\n"}},
           {{true, "set k 0 0 x\r\n"}},
           {{true, "get k:1\r\n"}, {false, "VALUE k:1 0 zz\r\n"}},
           {{true, "get k:1\r\n"}, {false, "STORED\r\n"}},
           {{true, "set " + std::string(600, 'k') + " 0 0 1\r\n"}},
       }) {
    uint64_t before = counters().streams_unparsed.load();
    Played b = play(bad);
    EXPECT_EQ(counters().streams_unparsed.load(), before + 1);
    for (const Step& s : b.rows) EXPECT_FALSE(s.error.empty());
  }
}

}  // namespace
