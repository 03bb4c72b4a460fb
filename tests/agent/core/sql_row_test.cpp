// The SQL row path of the recorder (close_sql, end_fetch) and SharedText: a statement's text shared by
// its rows, and SQL totals that equal the rows' plus the summary lines' elapsed exactly, past the step
// limit too.
#include <gtest/gtest.h>

#include <string>

#include "core/config.h"
#include "core/recorder.h"
#include "support/recorder_fixture.h"
#include "core/shared_text.h"
#include "support/test_support.h"
#include "core/transaction.h"

using namespace txray;
using namespace txray::test;  // FakeClock, Collected, RecorderFixture

// Each test's transaction is a "batch" of kind "process", ended with status 0.
struct SqlRowTest : RecorderFixture {
  SqlRowTest() : RecorderFixture("batch", "process", 0) {}
};

TEST(SharedText, CopiesShareTheBytesAndReassigningLeavesOtherHoldersAlone) {
  SharedText empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty, "");
  SharedText a("SELECT v FROM kv WHERE id = ?");
  SharedText b = a;
  EXPECT_EQ(b.view().data(), a.view().data());  // one buffer, two holders
  EXPECT_EQ(b, "SELECT v FROM kv WHERE id = ?");
  a = std::string_view("DELETE FROM kv");
  EXPECT_EQ(a, "DELETE FROM kv");
  EXPECT_EQ(b, "SELECT v FROM kv WHERE id = ?");  // still the old text
  SharedText c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): a moved-from SharedText is empty
  EXPECT_EQ(c.size(), 29u);
}

TEST_F(SqlRowTest, RowsShareTheStatementTextAndBinds) {
  SharedText text("SELECT v FROM kv WHERE id = ?");
  SharedText binds("int");
  Transaction* t = begin();
  for (int i = 0; i < 3; ++i) {
    StepRef s = rec::open(t, StepKind::SQL);
    FakeClock::advance(100, 10);
    EXPECT_EQ(rec::close_sql(s, {.text = &text, .fingerprint = 9, .binds = &binds, .rows = 1}), 100u);
  }
  Transaction& done = end(t);
  ASSERT_EQ(done.steps.size(), 5u);
  for (int i = 1; i <= 3; ++i) {
    const Step& st = done.steps[size_t(i)];
    EXPECT_EQ(st.text.view().data(), text.view().data()) << "row " << i << " copied the text";
    EXPECT_EQ(st.binds, "int");
    EXPECT_EQ(st.fingerprint, 9u);
    EXPECT_EQ(st.rows, 1);
    EXPECT_EQ(st.changes, -1);
    EXPECT_EQ(st.elapsed_ns, 100u);
    EXPECT_FALSE(st.open);
  }
  EXPECT_EQ(done.totals.sql_ns, 300u);
  EXPECT_EQ(done.totals.sql_count, 3u);
}

TEST_F(SqlRowTest, TotalsAreExactPastTheStepLimit) {
  Config c;
  c.max_steps = 10;
  set_config(c);
  SharedText select("SELECT a FROM t WHERE a > ?"), update("UPDATE t SET a = ?");
  Transaction* t = begin();
  uint64_t returned = 0;
  for (int i = 0; i < 60; ++i) {
    bool sel = i % 3 != 0;
    StepRef s = rec::open(t, StepKind::SQL);
    FakeClock::advance(1000 + uint64_t(i) * 7, 3);  // every execution a different elapsed
    uint64_t el = rec::close_sql(s, {.text = sel ? &select : &update,
                                     .fingerprint = sel ? 1u : 2u,
                                     .rows = sel ? 1 : 0,
                                     .changes = sel ? -1 : 1});
    EXPECT_EQ(el, 1000 + uint64_t(i) * 7) << "execution " << i;
    returned += el;
    if (sel) {  // two more rows fetched after the row was closed (and maybe folded)
      FakeClock::advance(50, 5);
      rec::end_fetch(s, 1, 2, 40);
    }
    FakeClock::advance(11, 1);
  }
  Transaction& done = end(t);
  ASSERT_EQ(done.steps.size(), 10u);
  uint64_t rows_elapsed = 0, sum_elapsed = 0, count = 0;
  int64_t rows = 0;
  uint64_t rows_fetch_ns = 0, folded_selects = 0;
  for (const Step& st : done.steps)
    if (st.kind == StepKind::SQL) {
      rows_elapsed += st.elapsed_ns;
      ++count;
      rows += st.rows;
      rows_fetch_ns += st.fetch_ns;
    }
  for (const StepSummary& s : done.summary) {
    sum_elapsed += s.elapsed_ns;
    count += s.count;
    rows += s.rows;
    if (s.fingerprint == 1) folded_selects = s.count;
  }
  EXPECT_EQ(done.summary.size(), 2u);
  EXPECT_EQ(done.totals.sql_count, 60u);
  EXPECT_EQ(count, 60u);
  EXPECT_EQ(done.totals.sql_ns, rows_elapsed + sum_elapsed);  // exactly, not within a tolerance
  EXPECT_EQ(done.totals.sql_ns, returned);
  EXPECT_EQ(rows, 40 * 3);                               // 40 selects of 3 rows each, folded or not
  // Fetch time: the rows' own plus the folded executions' (a summary line has no fetch field).
  EXPECT_EQ(done.totals.fetch_ns, 40u * 40);
  EXPECT_EQ(done.totals.fetch_ns, rows_fetch_ns + folded_selects * 40);
}

TEST_F(SqlRowTest, CloseReturnsTheElapsedOfAFoldedStepAndNothingForAStaleOne) {
  Config c;
  c.max_steps = 3;  // START, END and one row: every further step is folded at close
  set_config(c);
  Transaction* t = begin();
  StepRef first = rec::open(t, StepKind::DNS);
  FakeClock::advance(10);
  EXPECT_EQ(rec::close(first), 10u);
  StepRef folded = rec::open(t, StepKind::DNS);
  FakeClock::advance(25);
  EXPECT_EQ(rec::close(folded), 25u);
  EXPECT_EQ(rec::close(folded), 0u);  // gone into the summary: a second close changes nothing
  SharedText text("x");
  EXPECT_EQ(rec::close_sql(folded, {.text = &text}), 0u);
  Transaction& done = end(t);
  ASSERT_EQ(done.summary.size(), 1u);
  EXPECT_EQ(done.summary[0].elapsed_ns, 25u);
  EXPECT_EQ(done.summary[0].count, 1u);
  EXPECT_EQ(done.totals.sql_count, 0u);
}
