#include "shed.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace txray::report {

ShedSet load_shed(const Db& db, const Options& opt) {
  ShedSet out;
  if (!opt.tx_ids.empty()) return out;
  {
    Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='shed_counts'");
    has.step();
    if (has.i64(0) == 0) return out;
  }
  std::string sql =
      "SELECT app, name, origin, count, elapsed_ns, minute_unix_ns FROM shed_counts WHERE count > 0";
  if (!opt.app.empty()) sql += " AND app = :app";
  if (!opt.name.empty()) sql += " AND instr(name, :name) > 0";
  if (opt.since_unix_ns) sql += " AND minute_unix_ns + 60000000000 > :since";
  if (opt.until_unix_ns) sql += " AND minute_unix_ns <= :until";
  const auto min_ns = static_cast<int64_t>(std::llround(opt.min_ms * 1e6));
  if (min_ns > 0) sql += " AND elapsed_ns >= :min * count";
  sql += " ORDER BY app, name";
  Stmt st(db, sql);
  auto bind = [&](const char* name, auto value) {
    if (int i = sqlite3_bind_parameter_index(st.raw(), name); i > 0) st.bind(i, value);
  };
  if (!opt.app.empty()) bind(":app", opt.app);
  if (!opt.name.empty()) bind(":name", opt.name);
  if (opt.since_unix_ns) bind(":since", *opt.since_unix_ns);
  if (opt.until_unix_ns) bind(":until", *opt.until_unix_ns);
  if (min_ns > 0) bind(":min", min_ns);
  while (st.step()) {
    std::string app(st.text(0)), name(st.text(1));
    if (out.groups.empty() || out.groups.back().app != app || out.groups.back().name != name)
      out.groups.push_back({app, name, 0, 0, {}});
    ShedGroup& g = out.groups.back();
    const int64_t n = st.i64(3), e = st.i64(4);
    g.count += n;
    g.elapsed_ns += e;
    g.values.emplace_back(e / n, n);
    out.by_origin[std::string(st.text(2))] += n;
    out.count += n;
    out.elapsed_ns += e;
    const int64_t minute = st.i64(5);
    if (out.first_minute_unix_ns == 0 || minute < out.first_minute_unix_ns) out.first_minute_unix_ns = minute;
    out.last_minute_unix_ns = std::max(out.last_minute_unix_ns, minute);
  }
  return out;
}

int64_t merged_rank(const std::vector<int64_t>& exact, const std::vector<std::pair<int64_t, int64_t>>& weighted,
                    double q) {
  int64_t n = static_cast<int64_t>(exact.size());
  for (const auto& w : weighted) n += w.second;
  if (n == 0) return 0;
  auto rank = static_cast<int64_t>(std::ceil(q / 100.0 * static_cast<double>(n) - 1e-9));
  rank = std::clamp<int64_t>(rank, 1, n);
  // Walk both ascending lists; on equal values the exact one comes first (it does not matter which).
  size_t i = 0, j = 0;
  int64_t seen = 0;
  while (true) {
    bool take_exact = j >= weighted.size() || (i < exact.size() && exact[i] <= weighted[j].first);
    if (take_exact) {
      if (++seen >= rank) return exact[i];
      ++i;
    } else {
      seen += weighted[j].second;
      if (seen >= rank) return weighted[j].first;
      ++j;
    }
  }
}

Percentiles merged_percentiles(std::vector<int64_t>& exact, std::vector<std::pair<int64_t, int64_t>> weighted) {
  std::sort(exact.begin(), exact.end());
  std::sort(weighted.begin(), weighted.end());
  Percentiles p;
  p.p50 = merged_rank(exact, weighted, 50);
  p.p90 = merged_rank(exact, weighted, 90);
  p.p95 = merged_rank(exact, weighted, 95);
  p.p99 = merged_rank(exact, weighted, 99);
  p.max = merged_rank(exact, weighted, 100);
  return p;
}

void add_shed_to_summary(const ShedSet& shed, std::vector<int64_t> elapsed, Summary& s) {
  s.shed_transactions = shed.count;
  s.shed_by_origin = shed.by_origin;
  if (shed.count == 0) return;
  int64_t stored_total = 0;
  for (int64_t e : elapsed) stored_total += e;
  if (s.transactions == 0) {  // everything shed: the window is the shed minutes'
    s.first_start_unix_ns = shed.first_minute_unix_ns;
    s.last_end_unix_ns = shed.last_minute_unix_ns + 60'000'000'000;
  }
  s.transactions += shed.count;
  s.avg_ns = (stored_total + shed.elapsed_ns) / s.transactions;
  std::vector<std::pair<int64_t, int64_t>> weighted;
  for (const auto& g : shed.groups) weighted.insert(weighted.end(), g.values.begin(), g.values.end());
  s.pct = merged_percentiles(elapsed, std::move(weighted));
  s.error_rate = static_cast<double>(s.errors) / static_cast<double>(s.transactions);
  const int64_t span = s.last_end_unix_ns - s.first_start_unix_ns;
  s.throughput_per_s = span > 0 ? static_cast<double>(s.transactions) * 1e9 / static_cast<double>(span) : 0;
}

}  // namespace txray::report
