// The comparison as plain text cells, shared by the Markdown and HTML renderers and the viewer's
// comparison panel, so that all three show the same figures (docs/report.md, "Comparing two groups").
#include <cmath>
#include <cstdio>

#include "format.h"
#include "render.h"
#include "stats.h"

namespace txray::report {
namespace {

// A mean in ms (double ns): the precision of fmt_ms.
std::string mean_ms(double ns) { return fmt_ms(static_cast<int64_t>(std::llround(ns))); }

std::string per_tx(double v) {
  char buf[48];
  if (std::fabs(v - std::round(v)) < 0.005) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string example(const CompareExample& e) { return e.id ? hex16(e.txid) : "–"; }

}  // namespace

std::string fmt_delta_ms(double ns) {
  const int64_t v = static_cast<int64_t>(std::llround(ns));
  if (v == 0) return "0.000";
  return (v > 0 ? "+" : "−") + fmt_ms(v < 0 ? -v : v);
}

const char* part_label(const std::string& part) {
  if (part == "cpu") return "CPU in own code";
  if (part == "sql") return "SQL";
  if (part == "fetch") return "Fetch";
  if (part == "call") return "Outbound calls";
  if (part == "waiting") return "Waiting";
  return "?";
}

std::string why(const ComparePart& p) {
  if (!p.counted) return "";
  return per_tx(p.base_per_tx) + " × " + mean_ms(p.base_per_call_ns) + " ms → " + per_tx(p.cur_per_tx) + " × " +
         mean_ms(p.cur_per_call_ns) + " ms";
}

CompareRows compare_rows(const Report& r) {
  const Compare& c = r.compare;
  const Summary &b = r.compare.baseline, &u = r.summary;
  CompareRows out;
  const double base_mean = b.transactions ? static_cast<double>(b.shares.total_ns) / static_cast<double>(b.transactions) : 0;
  {
    std::string s = "Mean response time " + mean_ms(base_mean) + " ms → " +
                    mean_ms(base_mean + c.difference_ns) + " ms: the current group is " +
                    fmt_ms(static_cast<int64_t>(std::llround(std::fabs(c.difference_ns)))) + " ms " +
                    (c.difference_ns >= 0 ? "slower" : "faster");
    if (base_mean > 0) {
      char pct[48];
      const double ratio = (base_mean + c.difference_ns) / base_mean;
      if (ratio >= 10) std::snprintf(pct, sizeof pct, " (×%s)", fmt_count(std::llround(ratio)).c_str());
      else std::snprintf(pct, sizeof pct, " (%+.1f%%)", 100.0 * c.difference_ns / base_mean);
      s += pct;
    }
    if (!c.parts.empty() && c.difference_ns != 0) {
      const auto& top = c.parts.front();
      s += "; the largest part: " + std::string(part_label(top.part)) + " " + top.key + " " +
           fmt_delta_ms(top.contribution_ns) + " ms";
    }
    out.headline = s + ".";
  }
  out.summary.header = {"", "Baseline", "Current", "Difference"};
  auto srow = [&](std::string label, int64_t x, int64_t y, bool is_ms) {
    out.summary.rows.push_back({std::move(label), is_ms ? fmt_ms(x) : fmt_count(x), is_ms ? fmt_ms(y) : fmt_count(y),
                                is_ms ? fmt_delta_ms(static_cast<double>(y - x))
                                      : (y - x >= 0 ? "+" : "−") + fmt_count(y - x < 0 ? x - y : y - x)});
  };
  srow("Transactions", b.transactions, u.transactions, false);
  srow("Errors", b.errors, u.errors, false);
  out.summary.rows.push_back({"Mean ms", mean_ms(base_mean), mean_ms(base_mean + c.difference_ns),
                              fmt_delta_ms(c.difference_ns)});
  srow("p50 ms", b.pct.p50, u.pct.p50, true);
  srow("p90 ms", b.pct.p90, u.pct.p90, true);
  srow("p95 ms", b.pct.p95, u.pct.p95, true);
  srow("p99 ms", b.pct.p99, u.pct.p99, true);
  srow("Max ms", b.pct.max, u.pct.max, true);
  out.filters = "Baseline: " + c.baseline_filters + " · current: " + r.filters;

  out.parts.header = {"Part", "Baseline ms", "Current ms", "Contribution ms"};
  for (const auto& p : c.by_part)
    out.parts.rows.push_back({part_label(p.part), mean_ms(p.base_ns), mean_ms(p.cur_ns), fmt_delta_ms(p.contribution_ns)});
  out.parts.rows.push_back({"Response time", mean_ms(base_mean), mean_ms(base_mean + c.difference_ns),
                            fmt_delta_ms(c.difference_ns)});

  out.members.header = {"#", "Part", "Member", "Contribution ms", "Baseline ms", "Current ms",
                        "Per transaction (count × ms each)", "Baseline example", "Current example"};
  for (size_t i = 0; i < c.parts.size(); ++i) {
    const auto& p = c.parts[i];
    std::string member = p.key;
    if (!p.fingerprint.empty()) member += " [" + p.fingerprint + "]";
    out.members.rows.push_back({std::to_string(i + 1), part_label(p.part), member, fmt_delta_ms(p.contribution_ns),
                                mean_ms(p.base_ns), mean_ms(p.cur_ns), why(p),
                                p.folded_members ? "" : example(p.base_example),
                                p.folded_members ? "" : example(p.cur_example)});
  }

  out.changes.header = {"Change", "What", "Member", "Count", "Transactions", "Example"};
  for (const auto* list : {&c.appeared, &c.vanished})
    for (const auto& x : *list) {
      const char* what = x.what == "sql" ? "SQL statement" : x.what == "call" ? "call target" : "error";
      out.changes.rows.push_back({list == &c.appeared ? "appeared" : "vanished", what, x.key, fmt_count(x.count),
                                  fmt_count(x.transactions), example(x.example)});
    }

  out.steps.header = {"Step kind", "Baseline per transaction", "Current per transaction"};
  for (const auto& k : c.kinds) out.steps.rows.push_back({k.kind, per_tx(k.base_per_tx), per_tx(k.cur_per_tx)});

  out.notes =
      "Contribution = the member's mean time per transaction in the current group minus the same in the "
      "baseline; the contributions add up to the difference of the mean response times. Waiting is the "
      "response time that is neither CPU nor SQL, fetch or outbound calls: top-level connection steps "
      "(connect, DNS, DB_CONNECT) first, the rest is socket and file I/O, locks, sleeps and the scheduler.";
  if (!c.cpu_samples)
    out.notes += " The store holds no CPU samples, so CPU in own code is not split by function.";
  else
    out.notes += " CPU in own code is split by function in proportion to each transaction's CPU samples "
                 "(\"(other functions)\": a row's samples past its 8 hottest); a transaction without samples "
                 "keeps it as \"own code\".";
  return out;
}

}  // namespace txray::report
