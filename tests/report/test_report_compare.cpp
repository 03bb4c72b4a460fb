// The comparison's decomposition (collector/report/compare.h), as a pure computation: members add up to
// each response time exactly, contributions to the difference of the means, count and time effects to
// the contribution; appeared / vanished; the --top cut keeps the sum.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "compare.h"

namespace txray::report {
namespace {

constexpr int64_t kMs = 1'000'000;

StepRow row(int no, const std::string& kind, int64_t start, int64_t gap, int64_t cpu, int64_t elapsed,
            const std::string& text = "", int64_t fp = 0, int64_t fetch = 0) {
  StepRow r;
  r.no = no;
  r.kind = kind;
  r.start_ns = start;
  r.gap_ns = gap;
  r.cpu_ns = cpu;
  r.elapsed_ns = elapsed;
  r.text = text;
  r.fingerprint = fp;
  r.has_fingerprint = fp != 0;
  r.fetch_ns = fetch;
  return r;
}

// A transaction: `sql` statements of `per_sql` ms each (fingerprint fp), optionally one call, cpu and wait.
CompareTx tx(int64_t id, int sql, int64_t per_sql, int64_t fp, int64_t cpu, int64_t wait, int64_t call = 0,
             const std::string& url = "GET http://pricing:8080/quote?x=1", const std::string& error = "") {
  CompareTx t;
  t.id = id;
  t.txid = 0x1000 + id;
  t.error = error;
  int64_t at = 0;
  int no = 0;
  t.rows.push_back(row(no++, "START", 0, 0, 0, 0));
  for (int i = 0; i < sql; ++i) {
    t.rows.push_back(row(no++, "SQL", at, 0, 0, per_sql, "SELECT * FROM t WHERE id = ?", fp));
    at += per_sql;
  }
  if (call) {
    t.rows.push_back(row(no++, "HTTP_CALL", at, 0, 0, call, url));
    at += call;
  }
  at += cpu + wait;
  t.rows.push_back(row(no++, "END", at, cpu + wait, cpu, 0));
  t.totals = {at, cpu, sql * per_sql, 0, call};
  return t;
}

double sum_parts(const Compare& c) {
  double s = 0;
  for (const auto& p : c.parts) s += p.contribution_ns;
  return s;
}

TEST(Decompose, MembersAddUpToTheResponseTime) {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 2000; ++k) {
    auto u = [&](int64_t hi) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(hi)); };
    CompareTx t = tx(k + 1, static_cast<int>(u(5)), u(3 * kMs) + 1, 0x42 + u(3), u(5 * kMs), u(5 * kMs),
                     u(2) ? u(4 * kMs) : 0);
    // Totals that disagree with the rows (clamping) and a connect step.
    if (k % 3 == 0) t.totals.sql_ns += u(kMs);
    if (k % 5 == 0) t.rows.push_back(row(99, "SOCKET", 0, 0, 0, u(3 * kMs)));
    if (k % 7 == 0) t.totals.elapsed_ns = u(kMs);  // shorter than its parts
    int64_t sum = 0;
    for (const auto& m : decompose(t)) {
      EXPECT_GE(m.ns, 0);
      sum += m.ns;
    }
    EXPECT_EQ(sum, std::max<int64_t>(t.totals.elapsed_ns, 0)) << k;
  }
}

TEST(Decompose, SplitsByStatementTargetAndWait) {
  CompareTx t = tx(1, 3, 2 * kMs, 0x77, 4 * kMs, 1 * kMs, 5 * kMs);
  t.rows.push_back(row(9, "SOCKET", 0, 0, 0, kMs / 2));
  std::map<std::string, int64_t> ns, count;
  for (const auto& m : decompose(t)) ns[m.part + ":" + m.key] += m.ns, count[m.part + ":" + m.key] += m.count;
  EXPECT_EQ(ns["sql:SELECT * FROM t WHERE id = ?"], 6 * kMs);
  EXPECT_EQ(count["sql:SELECT * FROM t WHERE id = ?"], 3);
  EXPECT_EQ(ns["call:pricing:8080/quote"], 5 * kMs);
  EXPECT_EQ(ns["cpu:own code"], 4 * kMs);
  EXPECT_EQ(ns["waiting:connect (SOCKET)"], kMs / 2);
  EXPECT_EQ(ns["waiting:other (socket and file I/O, locks, sleeps, scheduler)"], kMs / 2);
}

TEST(Compare, RanksTheSlowerStatementFirstAndListsTheNewCall) {
  CompareSide base, cur;
  for (int i = 0; i < 40; ++i) base.add(tx(i + 1, 2, 3 * kMs, 0x77, 5 * kMs, 2 * kMs));
  for (int i = 0; i < 30; ++i)
    cur.add(tx(100 + i, 2, 9 * kMs, 0x77, 5 * kMs, 2 * kMs, 2 * kMs, "GET http://pricing:8080/quote",
               i == 3 ? "pricing timeout" : ""));
  const Compare c = compare_sides(base, cur, 20);
  EXPECT_NEAR(c.difference_ns, 14.0 * kMs, 1e-3);
  EXPECT_NEAR(sum_parts(c), c.difference_ns, 1e-3);
  ASSERT_FALSE(c.parts.empty());
  EXPECT_EQ(c.parts[0].part, "sql");
  EXPECT_EQ(c.parts[0].fingerprint, "0000000000000077");
  EXPECT_NEAR(c.parts[0].contribution_ns, 12.0 * kMs, 1e-3);
  EXPECT_NEAR(c.parts[0].base_per_tx, 2.0, 1e-9);
  EXPECT_NEAR(c.parts[0].cur_per_call_ns, 9.0 * kMs, 1e-3);
  EXPECT_NEAR(c.parts[0].count_effect_ns, 0.0, 1e-3);
  EXPECT_NEAR(c.parts[0].time_effect_ns, 12.0 * kMs, 1e-3);
  EXPECT_NE(c.parts[0].base_example.id, 0);
  EXPECT_GE(c.parts[0].cur_example.id, 100);
  EXPECT_EQ(c.parts[1].part, "call");
  EXPECT_EQ(c.parts[1].key, "pricing:8080/quote");
  bool call = false, error = false;
  for (const auto& a : c.appeared) {
    call |= a.what == "call" && a.key == "pricing:8080/quote" && a.count == 30;
    error |= a.what == "error" && a.key == "pricing timeout" && a.count == 1;
  }
  EXPECT_TRUE(call);
  EXPECT_TRUE(error);
  EXPECT_TRUE(c.vanished.empty());
  double by_part = 0;
  for (const auto& p : c.by_part) by_part += p.contribution_ns;
  EXPECT_NEAR(by_part, c.difference_ns, 1e-3);
}

TEST(Compare, CountEffectWhenTheSameStatementRunsMoreOften) {
  CompareSide base, cur;
  for (int i = 0; i < 10; ++i) base.add(tx(i + 1, 1, 2 * kMs, 0x5, kMs, 0));
  for (int i = 0; i < 10; ++i) cur.add(tx(50 + i, 21, 2 * kMs, 0x5, kMs, 0));
  const Compare c = compare_sides(base, cur, 20);
  ASSERT_FALSE(c.parts.empty());
  EXPECT_NEAR(c.parts[0].contribution_ns, 40.0 * kMs, 1e-3);
  EXPECT_NEAR(c.parts[0].count_effect_ns, 40.0 * kMs, 1e-3);
  EXPECT_NEAR(c.parts[0].cur_per_tx, 21.0, 1e-9);
  bool sql_kind = false;
  for (const auto& k : c.kinds) sql_kind |= k.kind == "SQL" && k.base_per_tx == 1.0 && k.cur_per_tx == 21.0;
  EXPECT_TRUE(sql_kind);
}

TEST(Compare, TheTopCutFoldsTheRestAndKeepsTheSum) {
  CompareSide base, cur;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) {
    const int64_t fp = 1 + static_cast<int64_t>(rng() % 40);
    (i % 2 ? cur : base).add(tx(i + 1, 1 + static_cast<int>(rng() % 3), 1 + static_cast<int64_t>(rng() % kMs), fp,
                                static_cast<int64_t>(rng() % kMs), static_cast<int64_t>(rng() % kMs)));
  }
  const Compare all = compare_sides(base, cur, 1000), cut = compare_sides(base, cur, 5);
  EXPECT_NEAR(sum_parts(all), all.difference_ns, 1e-2);
  EXPECT_NEAR(sum_parts(cut), cut.difference_ns, 1e-2);
  EXPECT_LE(cut.parts.size(), 5u + 5u);
  EXPECT_EQ(cut.members, all.members);
  EXPECT_GT(cut.members, 30);
  bool folded = false;
  for (const auto& p : cut.parts) folded |= p.folded_members > 0;
  EXPECT_TRUE(folded);
}

TEST(Compare, AnEmptySideCountsAsZero) {
  CompareSide base, cur;
  cur.add(tx(1, 1, kMs, 0x9, kMs, 0));
  const Compare c = compare_sides(base, cur, 20);
  EXPECT_NEAR(c.difference_ns, 2.0 * kMs, 1e-6);
  EXPECT_NEAR(sum_parts(c), c.difference_ns, 1e-6);
  EXPECT_EQ(c.base_typical.id, 0);
}

}  // namespace
}  // namespace txray::report
