#include <cstdio>

#include "format.h"
#include "render.h"
#include "report.h"
#include "stats.h"

namespace txray::report {
namespace {

std::string num(int64_t v) { return std::to_string(v); }
// The responsible step's top frames, innermost first, " <- " between them.
std::string joined_stack(const std::vector<std::string>& frames) {
  std::string out;
  for (const auto& f : frames) out += (out.empty() ? "" : " <- ") + f;
  return out;
}
std::string ms(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", to_ms(ns));
  return buf;
}
std::string frac(double f) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6f", f);
  return buf;
}

std::string statuses(const CallGroup& g) {
  std::string s;
  for (const auto& [code, n] : g.statuses) s += (s.empty() ? "" : " ") + std::to_string(code) + ":" + num(n);
  return s;
}

Table summary_table(const Report& r) {
  const Summary& s = r.summary;
  const TimeShares& t = s.shares;
  auto share = [&](int64_t v) { return frac(t.total_ns ? static_cast<double>(v) / static_cast<double>(t.total_ns) : 0); };
  Table tb{{"key", "value"}, {}};
  auto add = [&](std::string k, std::string v) { tb.rows.push_back({std::move(k), std::move(v)}); };
  add("transactions", num(s.transactions));
  add("errors", num(s.errors));
  add("error_rate", frac(s.error_rate));
  add("throughput_per_s", frac(s.throughput_per_s));
  add("first_start", s.transactions ? fmt_time(s.first_start_unix_ns) : "");
  add("last_end", s.transactions ? fmt_time(s.last_end_unix_ns) : "");
  add("avg_ms", ms(s.avg_ns));
  add("p50_ms", ms(s.pct.p50));
  add("p90_ms", ms(s.pct.p90));
  add("p95_ms", ms(s.pct.p95));
  add("p99_ms", ms(s.pct.p99));
  add("max_ms", ms(s.pct.max));
  add("cpu_ms", ms(s.cpu_total_ns));
  add("share_cpu", share(t.cpu_ns));
  add("share_sql", share(t.sql_ns));
  add("share_fetch", share(t.fetch_ns));
  add("share_calls", share(t.call_ns));
  add("share_waiting", share(t.wait_ns));
  add("unattributed_steps", num(s.unattributed_steps));
  std::string by_kind;  // as the statuses of calls: "HTTP_CALL:10 SOCKET:2"
  for (const auto& [kind, n] : s.unattributed_by_kind) by_kind += (by_kind.empty() ? "" : " ") + kind + ":" + num(n);
  add("unattributed_by_kind", by_kind);
  add("dropped_transactions", num(s.dropped_transactions));
  std::string by_reason;
  for (const auto& [reason, n] : s.dropped_by_reason) by_reason += (by_reason.empty() ? "" : " ") + reason + ":" + num(n);
  add("dropped_by_reason", by_reason);
  add("shed_transactions", num(s.shed_transactions));
  std::string by_origin;
  for (const auto& [origin, n] : s.shed_by_origin) by_origin += (by_origin.empty() ? "" : " ") + origin + ":" + num(n);
  add("shed_by_origin", by_origin);
  std::string cost, cost_share;  // per application: "shop:2100 api:850" (ns per transaction), shares
  for (const auto& a : s.agent_cost) {
    char v[64];
    std::snprintf(v, sizeof v, "%.0f", a.mean_ns());
    cost += (cost.empty() ? "" : " ") + a.app + ":" + v;
    std::snprintf(v, sizeof v, "%.6f", a.share());
    cost_share += (cost_share.empty() ? "" : " ") + a.app + ":" + v;
  }
  add("agent_cost_ns_per_tx", cost);
  add("agent_cost_share", cost_share);
  add("filters", r.filters);
  return tb;
}

Table groups_table(const std::vector<CallGroup>& groups, bool is_call) {
  Table tb;
  tb.header = {"rank"};
  if (is_call) tb.header.insert(tb.header.end(), {"host", "path"});
  else tb.header.push_back("fingerprint");
  tb.header.insert(tb.header.end(), {"calls", "summarized", "transactions", "total_ms", "share", "avg_ms",
                                     "p95_ms", "max_ms"});
  tb.header.push_back(is_call ? "statuses" : "rows");
  tb.header.insert(tb.header.end(), {"errors", "example"});
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    std::vector<std::string> row{num(static_cast<int64_t>(i + 1))};
    if (is_call) row.insert(row.end(), {g.host, g.path});
    else row.push_back(g.key);
    row.insert(row.end(), {num(g.calls), num(g.summarized), num(g.transactions), ms(g.total_ns), frac(g.share),
                           ms(g.avg_ns), ms(g.p95_ns), ms(g.max_ns)});
    row.push_back(is_call ? statuses(g) : num(g.rows));
    row.insert(row.end(), {num(g.errors), g.example});
    tb.rows.push_back(std::move(row));
  }
  return tb;
}

std::string dbl_ms(double ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", ns / 1e6);
  return buf;
}
std::string example_id(const CompareExample& e) { return e.id ? hex16(e.txid) : ""; }

// The comparison (docs/report.md, "Comparing two groups"): four tables.
Table compare_table(const Report& r, const std::string& name) {
  const Compare& c = r.compare;
  Table tb;
  if (name == "compare_summary") {
    tb.header = {"key", "baseline", "current"};
    const Summary &b = c.baseline, &u = r.summary;
    auto add = [&](std::string k, std::string x, std::string y) { tb.rows.push_back({std::move(k), std::move(x), std::move(y)}); };
    add("filters", c.baseline_filters, r.filters);
    add("transactions", num(b.transactions), num(u.transactions));
    add("errors", num(b.errors), num(u.errors));
    add("avg_ms", ms(b.avg_ns), ms(u.avg_ns));
    add("p50_ms", ms(b.pct.p50), ms(u.pct.p50));
    add("p90_ms", ms(b.pct.p90), ms(u.pct.p90));
    add("p95_ms", ms(b.pct.p95), ms(u.pct.p95));
    add("p99_ms", ms(b.pct.p99), ms(u.pct.p99));
    add("max_ms", ms(b.pct.max), ms(u.pct.max));
    for (const auto& p : c.by_part) add("mean_" + p.part + "_ms", dbl_ms(p.base_ns), dbl_ms(p.cur_ns));
    add("difference_ms", "", dbl_ms(c.difference_ns));
    add("example_txid", example_id(c.base_typical), example_id(c.cur_typical));
  } else if (name == "compare") {
    tb.header = {"rank", "part", "key", "fingerprint", "contribution_ms", "baseline_ms", "current_ms",
                 "baseline_per_tx", "current_per_tx", "baseline_ms_per_call", "current_ms_per_call",
                 "count_effect_ms", "time_effect_ms", "baseline_txid", "current_txid"};
    for (size_t i = 0; i < c.parts.size(); ++i) {
      const auto& p = c.parts[i];
      auto f = [&](double v) { return p.counted ? frac(v) : std::string(); };
      auto m = [&](double v) { return p.counted ? dbl_ms(v) : std::string(); };
      tb.rows.push_back({num(static_cast<int64_t>(i + 1)), p.part, p.key, p.fingerprint, dbl_ms(p.contribution_ns),
                         dbl_ms(p.base_ns), dbl_ms(p.cur_ns), f(p.base_per_tx), f(p.cur_per_tx),
                         m(p.base_per_call_ns), m(p.cur_per_call_ns), m(p.count_effect_ns), m(p.time_effect_ns),
                         example_id(p.base_example), example_id(p.cur_example)});
    }
  } else if (name == "compare_changes") {
    tb.header = {"change", "what", "key", "fingerprint", "count", "transactions", "example_txid"};
    for (const auto* list : {&c.appeared, &c.vanished})
      for (const auto& x : *list)
        tb.rows.push_back({list == &c.appeared ? "appeared" : "vanished", x.what, x.key, x.fingerprint, num(x.count),
                           num(x.transactions), example_id(x.example)});
  } else if (name == "compare_steps") {
    tb.header = {"kind", "baseline_per_tx", "current_per_tx"};
    for (const auto& k : c.kinds) tb.rows.push_back({k.kind, frac(k.base_per_tx), frac(k.cur_per_tx)});
  }
  return tb;
}

}  // namespace

Table csv_table(const Report& r, const std::string& name) {
  if (name == "summary") return summary_table(r);
  if (name.rfind("compare", 0) == 0) return compare_table(r, name);
  Table tb;
  if (name == "slowest") {
    tb.header = {"id", "txid", "app", "name", "start", "elapsed_ms", "cpu_ms", "sql_ms", "fetch_ms", "calls_ms",
                 "status", "error", "dominant", "dominant_ms", "step_no", "step", "step_stack"};
    for (const auto& x : r.slowest)
      tb.rows.push_back({num(x.id), hex16(x.txid), x.app, x.name, fmt_time(x.start_unix_ns), ms(x.elapsed_ns),
                         ms(x.cpu_ns), ms(x.sql_ns), ms(x.fetch_ns), ms(x.call_ns), num(x.status), x.error,
                         cost_name(x.dominant), ms(x.dominant_ns), num(x.step_no), x.step, joined_stack(x.step_stack)});
  } else if (name == "names") {
    tb.header = {"app", "name", "count", "total_ms", "share", "avg_ms", "p95_ms", "max_ms", "errors"};
    for (const auto& n : r.names)
      tb.rows.push_back({n.app, n.name, num(n.count), ms(n.total_ns), frac(n.share), ms(n.avg_ns), ms(n.p95_ns),
                         ms(n.max_ns), num(n.errors)});
  } else if (name == "sql") {
    return groups_table(r.sql, false);
  } else if (name == "calls") {
    return groups_table(r.calls, true);
  } else if (name == "cache") {
    tb.header = {"rank", "system", "key", "calls", "summarized", "misses", "transactions", "total_ms", "share",
                 "avg_ms", "p95_ms", "max_ms", "errors", "example"};
    for (size_t i = 0; i < r.cache.size(); ++i) {
      const auto& g = r.cache[i];
      tb.rows.push_back({num(static_cast<int64_t>(i + 1)), g.host, g.key, num(g.calls), num(g.summarized),
                         num(g.misses), num(g.transactions), ms(g.total_ns), frac(g.share), ms(g.avg_ns),
                         ms(g.p95_ns), ms(g.max_ns), num(g.errors), g.example});
    }
  } else if (name == "repeated") {
    tb.header = {"kind", "key", "transactions", "executions", "max_per_tx", "total_ms", "worst_transactions",
                 "example"};
    for (const auto& p : r.repeated) {
      std::string worst;
      for (const auto& w : p.worst) worst += (worst.empty() ? "" : " ") + hex16(w.txid) + ":" + num(w.count);
      tb.rows.push_back({p.kind, p.key, num(p.transactions), num(p.executions), num(p.max_per_tx), ms(p.total_ns),
                         worst, p.example});
    }
  } else if (name == "histogram") {
    tb.header = {"lo_ms", "hi_ms", "count"};
    for (const auto& b : r.histogram)
      tb.rows.push_back({ms(b.lo_ns), b.hi_ns == INT64_MAX ? "" : ms(b.hi_ns), num(b.count)});
  }
  return tb;
}

void render_csv(const Table& t, std::ostream& out) {
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << csv_field(cells[i]);
    out << "\n";  // RFC 4180 quoting, Unix line ends
  };
  line(t.header);
  for (const auto& row : t.rows) line(row);
}

}  // namespace txray::report
