#include <cstdint>
#include "format.h"
#include "frame_name.h"
#include "render.h"
#include "stats.h"

namespace txray::report {
namespace {

// A table cell from data: one line, no pipe or HTML that a Markdown viewer would interpret.
std::string cell(std::string_view s, size_t max_chars = 200);

// " · at f0 ← f1 ← f2": the responsible step's top frames (innermost first; "←" = called from).
std::string stack_cell(const std::vector<std::string>& frames) {
  std::string out;
  for (const auto& f : frames) out += (out.empty() ? " \xc2\xb7 at " : " \xe2\x86\x90 ") + cell(names::short_frame_name(f), 120);
  return out;
}

std::string cell(std::string_view s, size_t max_chars) {
  std::string out;
  for (char c : shorten(s, max_chars)) {
    if (c == '|') out += "\\|";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '`' || c == '*' || c == '[' || c == ']' || c == '\\') out += '\\', out += c;
    else out += c;
  }
  return out;
}

void row(std::ostream& o, std::initializer_list<std::string> cells) {
  o << "|";
  for (const auto& c : cells) o << " " << c << " |";
  o << "\n";
}

void head(std::ostream& o, std::initializer_list<std::string> cells, std::string_view align) {
  row(o, cells);
  o << "|";
  for (char a : align) o << (a == 'r' ? "---:|" : "---|");
  o << "\n";
}

std::string shown(size_t shown, int64_t total) {
  return static_cast<int64_t>(shown) < total
             ? " (top " + std::to_string(shown) + " of " + fmt_count(total) + ")"
             : "";
}

void groups(std::ostream& o, const std::vector<CallGroup>& gs, bool is_call) {
  if (gs.empty()) {
    o << (is_call ? "No outbound calls.\n\n" : "No SQL statements.\n\n");
    return;
  }
  head(o, {"Rank", is_call ? "Host" : "Fingerprint", is_call ? "Path" : "Example", "Calls", "Total ms",
           "Share", "Avg ms", "p95 ms", "Max ms", is_call ? "Status codes" : "Rows", "Errors"},
       "rllrrrrrrrr");
  for (size_t i = 0; i < gs.size(); ++i) {
    const auto& g = gs[i];
    std::string st;
    for (const auto& [code, n] : g.statuses) st += (st.empty() ? "" : ", ") + std::to_string(code) + "×" + fmt_count(n);
    std::string calls = fmt_count(g.calls) + (g.summarized ? " (" + fmt_count(g.summarized) + " folded)" : "");
    row(o, {std::to_string(i + 1), is_call ? cell(g.host) : "`" + g.key + "`",
            is_call ? cell(g.path) : cell(g.example, 120), calls, fmt_ms(g.total_ns), fmt_pct(g.share),
            fmt_ms(g.avg_ns), fmt_ms(g.p95_ns), fmt_ms(g.max_ns), is_call ? st : fmt_count(g.rows),
            fmt_count(g.errors)});
  }
  o << "\n";
}

// Cache commands: the pattern is the example (the key is the fingerprint, of no use to a reader).
void cache_groups(std::ostream& o, const std::vector<CallGroup>& gs) {
  if (gs.empty()) {
    o << "No cache commands.\n\n";
    return;
  }
  head(o, {"Rank", "System", "Command", "Calls", "Misses", "Total ms", "Share", "Avg ms", "p95 ms", "Max ms",
           "Errors"},
       "rllrrrrrrrr");
  for (size_t i = 0; i < gs.size(); ++i) {
    const auto& g = gs[i];
    std::string calls = fmt_count(g.calls) + (g.summarized ? " (" + fmt_count(g.summarized) + " folded)" : "");
    row(o, {std::to_string(i + 1), g.host, "`" + cell(g.example, 120) + "`", calls, fmt_count(g.misses),
            fmt_ms(g.total_ns), fmt_pct(g.share), fmt_ms(g.avg_ns), fmt_ms(g.p95_ns), fmt_ms(g.max_ns),
            fmt_count(g.errors)});
  }
  o << "\n";
}

void table(std::ostream& o, const Table& t, std::string_view align, size_t code_col = SIZE_MAX) {
  o << "|";
  for (const auto& c : t.header) o << " " << cell(c) << " |";
  o << "\n|";
  for (char a : align) o << (a == 'r' ? "---:|" : "---|");
  o << "\n";
  for (const auto& r : t.rows) {
    o << "|";
    for (size_t i = 0; i < r.size(); ++i) o << " " << cell(r[i], i == code_col ? 160 : 200) << " |";
    o << "\n";
  }
  o << "\n";
}

void compare_md(const Report& r, std::ostream& o) {
  const CompareRows c = compare_rows(r);
  o << "## Comparison with the baseline\n\n" << cell(c.headline, 400) << "\n\n" << cell(c.filters, 600) << "\n\n";
  table(o, c.summary, "lrrr");
  o << "### Where the difference comes from\n\n";
  table(o, c.parts, "lrrr");
  o << "Ranked by contribution (" << fmt_count(r.compare.members) << " members):\n\n";
  table(o, c.members, "rllrrrlll", 2);
  o << cell(c.notes, 1000) << "\n\n";
  o << "### What appeared or vanished\n\n";
  if (c.changes.rows.empty()) o << "Nothing: the same statements, call targets and errors on both sides.\n\n";
  else table(o, c.changes, "lllrrl", 2);
  o << "### Steps per transaction by kind\n\n";
  if (c.steps.rows.empty()) o << "No steps.\n\n";
  else table(o, c.steps, "lrr");
  o << "The sections below describe the current group.\n\n";
}

}  // namespace

void render_md(const Report& r, std::ostream& o) {
  const Summary& s = r.summary;
  const TimeShares& t = s.shares;
  auto share = [&](int64_t v) { return fmt_pct(t.total_ns ? static_cast<double>(v) / static_cast<double>(t.total_ns) : 0); };

  o << "# txray slow-call report\n\n";
  o << "Store `" << cell(r.db) << "` · filters: " << cell(r.filters) << " · generated " << fmt_time(r.generated_unix_ns)
    << "\n\n";
  if (r.has_compare) compare_md(r, o);

  o << "## Summary\n\n";
  if (s.transactions == 0) {
    o << "No transactions match.\n\n";
  } else {
    o << "Window " << fmt_time(s.first_start_unix_ns) << " – " << fmt_time(s.last_end_unix_ns);
    if (!s.apps.empty()) {
      o << " · apps:";
      for (const auto& a : s.apps) o << " " << cell(a);
    }
    o << "\n\n";
  }
  char tput[64];
  std::snprintf(tput, sizeof tput, "%.2f/s", s.throughput_per_s);
  head(o, {"Transactions", "Throughput", "Errors", "Error rate", "Avg ms", "p50 ms", "p90 ms", "p95 ms", "p99 ms",
           "Max ms"},
       "rrrrrrrrrr");
  row(o, {fmt_count(s.transactions), tput, fmt_count(s.errors), fmt_pct(s.error_rate), fmt_ms(s.avg_ns),
          fmt_ms(s.pct.p50), fmt_ms(s.pct.p90), fmt_ms(s.pct.p95), fmt_ms(s.pct.p99), fmt_ms(s.pct.max)});
  o << "\nPercentiles by nearest rank: pN is the ⌈N/100 × n⌉-th fastest response time.\n\n";
  o << "Where the time went (share of the total response time, " << fmt_ms(t.total_ns) << " ms):\n\n";
  head(o, {"CPU in own code", "SQL", "Fetch", "Outbound calls", "Waiting"}, "rrrrr");
  row(o, {share(t.cpu_ns), share(t.sql_ns), share(t.fetch_ns), share(t.call_ns), share(t.wait_ns)});
  o << "\n";
  if (s.unattributed_steps == 0) {
    o << "Unattributed steps: none.\n\n";
  } else {
    o << "**Unattributed steps: " << fmt_count(s.unattributed_steps) << "** ("
      << fmt_kind_counts(s.unattributed_by_kind) << "): " << kUnattributedMeaning << ".\n\n";
  }
  if (s.dropped_transactions > 0) {
    o << "**Dropped transactions: " << fmt_count(s.dropped_transactions) << "** ("
      << fmt_kind_counts(s.dropped_by_reason) << "): " << kDroppedMeaning << ".\n\n";
  }
  if (s.shed_transactions > 0) {
    o << "**Shed transactions: " << fmt_count(s.shed_transactions) << "** ("
      << fmt_kind_counts(s.shed_by_origin) << "): " << kShedMeaning << ".\n\n";
  }
  if (!s.agent_cost.empty()) {
    o << "Agent cost (" << kAgentCostMeaning << "):\n\n";
    head(o, {"Application", "Transactions", "Agent cost per transaction", "Share of response time"}, "lrrr");
    for (const auto& a : s.agent_cost)
      row(o, {a.app, fmt_count(a.transactions), fmt_agent_cost(a.mean_ns()), fmt_pct(a.share())});
    o << "\n";
  }

  o << "## Slowest transactions\n\n";
  if (r.slowest.empty()) o << "None.\n\n";
  else {
    head(o, {"#", "Start", "Name", "Txid", "Response ms", "CPU ms", "SQL ms", "Calls ms", "Status", "Dominant cost",
             "Responsible step"},
         "rllrrrrrrll");
    for (size_t i = 0; i < r.slowest.size(); ++i) {
      const auto& x = r.slowest[i];
      std::string status = std::to_string(x.status) + (x.error.empty() ? "" : " " + cell(x.error, 60));
      row(o, {std::to_string(i + 1), fmt_time(x.start_unix_ns), cell(x.name, 80), "`" + hex16(x.txid) + "`",
              fmt_ms(x.elapsed_ns), fmt_ms(x.cpu_ns), fmt_ms(x.sql_ns), fmt_ms(x.call_ns), status,
              std::string(cost_name(x.dominant)) + " " + fmt_ms(x.dominant_ns) + " ms",
              (x.step.empty() ? "–" : cell(x.step, 160)) + stack_cell(x.step_stack)});
    }
    o << "\n";
    bool any_hot = false;
    for (size_t i = 0; i < r.slowest.size(); ++i) {
      if (r.slowest[i].hot.empty()) continue;
      if (!any_hot) o << "Hottest functions (CPU samples, share of the transaction's samples):\n\n";
      any_hot = true;
      o << "- #" << i + 1 << ": " << cell(names::short_frame_name(r.slowest[i].hot), 300) << "\n";
    }
    if (any_hot) o << "\n";
  }

  o << "## Transaction names" << shown(r.names.size(), r.name_groups) << "\n\n";
  if (r.names.empty()) o << "None.\n\n";
  else {
    head(o, {"Name", "App", "Count", "Total ms", "Share", "Avg ms", "p95 ms", "Max ms", "Errors"}, "llrrrrrrr");
    for (const auto& n : r.names)
      row(o, {cell(n.name, 100), cell(n.app), fmt_count(n.count), fmt_ms(n.total_ns), fmt_pct(n.share),
              fmt_ms(n.avg_ns), fmt_ms(n.p95_ns), fmt_ms(n.max_ns), fmt_count(n.errors)});
    o << "\n";
  }

  o << "## SQL by fingerprint" << shown(r.sql.size(), r.sql_groups) << "\n\n";
  groups(o, r.sql, false);
  o << "## Outbound calls by host and path" << shown(r.calls.size(), r.call_groups) << "\n\n";
  groups(o, r.calls, true);
  o << "## Cache commands by pattern" << shown(r.cache.size(), r.cache_groups) << "\n\n";
  cache_groups(o, r.cache);
  o << "p95 and max cover the calls recorded as steps; calls folded past the per-transaction step limit count "
       "in calls, total and average only.\n\n";

  o << "## Repeated calls inside one transaction (N+1, " << r.repeat_threshold << " or more times)"
    << shown(r.repeated.size(), r.repeated_groups) << "\n\n";
  if (r.repeated.empty()) o << "None found.\n\n";
  else {
    head(o, {"Kind", "Statement / target", "Transactions", "Executions", "Max in one", "Total ms", "Worst transactions"},
         "llrrrrl");
    for (const auto& p : r.repeated) {
      std::string worst;
      for (size_t i = 0; i < p.worst.size() && i < 5; ++i)
        worst += (i ? ", " : "") + std::string("`") + hex16(p.worst[i].txid) + "` ×" + fmt_count(p.worst[i].count);
      if (p.worst.size() > 5) worst += ", …";
      row(o, {p.kind, cell(p.example.empty() ? p.key : p.example, 120), fmt_count(p.transactions),
              fmt_count(p.executions), fmt_count(p.max_per_tx), fmt_ms(p.total_ns), worst});
    }
    o << "\n";
  }

  o << "## Response-time histogram\n\n";
  if (r.histogram.empty()) o << "No transactions.\n\n";
  else {
    int64_t most = 1;
    for (const auto& b : r.histogram) most = std::max(most, b.count);
    head(o, {"Response time", "Count", ""}, "lrl");
    for (const auto& b : r.histogram) {
      std::string range = fmt_duration_ms_label(b.lo_ns) + " – " +
                          (b.hi_ns == INT64_MAX ? std::string("∞") : fmt_duration_ms_label(b.hi_ns));
      std::string bar(static_cast<size_t>(b.count * 40 / most), '#');
      row(o, {range, fmt_count(b.count), bar.empty() ? "" : "`" + bar + "`"});
    }
    o << "\n";
  }
}

}  // namespace txray::report
