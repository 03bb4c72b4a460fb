// One self-contained HTML file: inline CSS, inline SVG (time shares, scatter, histogram), then the
// tables. Every value that comes from the store goes through html_escape (h() below).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "format.h"
#include "frame_name.h"
#include "render.h"
#include "stats.h"

namespace txray::report {
namespace {

std::string h(std::string_view s) { return html_escape(s); }
std::string hs(std::string_view s, size_t n) { return html_escape(shorten(s, n)); }

std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

const char* kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px 32px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.meta{color:#5a6475;font-size:12.5px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{border:1px solid #dde2ea;border-radius:6px;padding:8px 14px;min-width:92px;background:#f7f9fc}
.card b{display:block;font-size:18px}.card span{color:#5a6475;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.chart{border:1px solid #dde2ea;border-radius:6px;padding:8px}
.chart h3{font-size:13px;margin:0 0 4px;color:#3a4456}
table{border-collapse:collapse;margin:6px 0 4px;font-size:12.5px;max-width:100%}
th,td{border-bottom:1px solid #e6e9ef;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f3f8;font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.id{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;white-space:nowrap}
td.code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;max-width:520px;word-break:break-word}
.stack{color:#555;font-size:11px;margin-top:2px}
.cost{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:11.5px;white-space:nowrap}
.note{color:#5a6475;font-size:12px;margin:2px 0 10px}
svg text{font:11px system-ui,sans-serif;fill:#3a4456}
)";

// Colours of the time shares and of the dominant costs (same hue for the same kind of time).
const char* share_colour(int i) {
  static const char* c[] = {"#3b7dd8", "#e0803a", "#c9a227", "#8e5bc2", "#9aa5b4"};
  return c[i];
}
const char* cost_colour(Cost c) {
  switch (c) {
    case Cost::Cpu: return "#3b7dd8";
    case Cost::Sql: return "#e0803a";
    case Cost::Fetch: return "#c9a227";
    case Cost::Call: return "#8e5bc2";
    case Cost::SocketWait: return "#2a9d8f";
    case Cost::Idle: return "#9aa5b4";
  }
  return "#999";
}

void shares_bar(std::ostream& o, const TimeShares& t) {
  const int64_t parts[] = {t.cpu_ns, t.sql_ns, t.fetch_ns, t.call_ns, t.wait_ns};
  const char* names[] = {"CPU in own code", "SQL", "Fetch", "Outbound calls", "Waiting"};
  const double W = 900;
  o << "<svg width=\"" << W << "\" height=\"52\" role=\"img\" aria-label=\"time shares\">";
  double x = 0;
  for (int i = 0; i < 5; ++i) {
    const double f = t.total_ns ? static_cast<double>(parts[i]) / static_cast<double>(t.total_ns) : 0;
    const double w = f * W;
    if (w > 0)
      o << "<rect x=\"" << num(x) << "\" y=\"0\" width=\"" << num(w) << "\" height=\"22\" fill=\"" << share_colour(i)
        << "\"><title>" << names[i] << " " << fmt_pct(f) << "</title></rect>";
    x += w;
  }
  x = 0;
  for (int i = 0; i < 5; ++i) {
    const double f = t.total_ns ? static_cast<double>(parts[i]) / static_cast<double>(t.total_ns) : 0;
    o << "<rect x=\"" << x << "\" y=\"32\" width=\"12\" height=\"12\" fill=\"" << share_colour(i) << "\"/>"
      << "<text x=\"" << x + 16 << "\" y=\"43\">" << names[i] << " " << fmt_pct(f) << "</text>";
    x += 178;
  }
  o << "</svg>";
}

std::string clock(int64_t unix_ns) { return fmt_time(unix_ns).substr(11, 8); }

void scatter(std::ostream& o, const Scatter& sc) {
  const double L = 58, T = 8, PW = 600, PH = 260, W = L + PW + 12, H = T + PH + 34;
  o << "<svg width=\"" << W << "\" height=\"" << H << "\" role=\"img\" aria-label=\"response time scatter\">";
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << PW << "\" height=\"" << PH
    << "\" fill=\"#fbfcfe\" stroke=\"#c9d0db\"/>";
  if (sc.cols > 0) {
    const double ly0 = std::log10(static_cast<double>(sc.y0_ns)), ly1 = std::log10(static_cast<double>(sc.y1_ns));
    for (int64_t v = sc.y0_ns; v <= sc.y1_ns; v *= 10) {  // decade grid lines
      const double y = T + PH - (std::log10(static_cast<double>(v)) - ly0) / (ly1 - ly0) * PH;
      o << "<line x1=\"" << L << "\" x2=\"" << L + PW << "\" y1=\"" << num(y) << "\" y2=\"" << num(y)
        << "\" stroke=\"#e3e7ee\"/><text x=\"" << L - 6 << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">"
        << h(fmt_duration_ms_label(v)) << "</text>";
    }
    int64_t most = 1;
    for (const auto& c : sc.cells) most = std::max(most, c.count);
    const double cw = PW / sc.cols, ch = PH / sc.rows;
    for (const auto& c : sc.cells) {
      const double a = 0.35 + 0.65 * std::log(1.0 + static_cast<double>(c.count)) / std::log(1.0 + static_cast<double>(most));
      o << "<rect x=\"" << num(L + c.x * cw, 2) << "\" y=\"" << num(T + PH - (c.y + 1) * ch, 2) << "\" width=\""
        << num(cw, 2) << "\" height=\"" << num(ch, 2) << "\" fill=\"" << (c.errors ? "#d64545" : "#3b7dd8")
        << "\" fill-opacity=\"" << num(a, 2) << "\"/>";
    }
    o << "<text x=\"" << L << "\" y=\"" << T + PH + 16 << "\">" << clock(sc.x0_unix_ns) << "</text>"
      << "<text x=\"" << L + PW << "\" y=\"" << T + PH + 16 << "\" text-anchor=\"end\">" << clock(sc.x1_unix_ns)
      << "</text><text x=\"" << L + PW / 2 << "\" y=\"" << T + PH + 30
      << "\" text-anchor=\"middle\">end time (UTC) · red: with errors</text>";
  }
  o << "</svg>";
}

void histogram_svg(std::ostream& o, const std::vector<Bucket>& bs) {
  const double L = 50, T = 8, PW = 440, PH = 236, W = L + PW + 10, H = T + PH + 64;
  o << "<svg width=\"" << W << "\" height=\"" << H << "\" role=\"img\" aria-label=\"response time histogram\">";
  int64_t most = 1;
  for (const auto& b : bs) most = std::max(most, b.count);
  o << "<line x1=\"" << L << "\" x2=\"" << L + PW << "\" y1=\"" << T + PH << "\" y2=\"" << T + PH
    << "\" stroke=\"#9aa5b4\"/><text x=\"" << L - 6 << "\" y=\"" << T + 10 << "\" text-anchor=\"end\">"
    << fmt_count(most) << "</text><text x=\"" << L - 6 << "\" y=\"" << T + PH << "\" text-anchor=\"end\">0</text>";
  if (!bs.empty()) {
    const double bw = PW / static_cast<double>(bs.size());
    for (size_t i = 0; i < bs.size(); ++i) {
      const double bh = static_cast<double>(bs[i].count) / static_cast<double>(most) * PH;
      const double x = L + static_cast<double>(i) * bw;
      std::string range = fmt_duration_ms_label(bs[i].lo_ns) + " – " +
                          (bs[i].hi_ns == INT64_MAX ? std::string("∞") : fmt_duration_ms_label(bs[i].hi_ns));
      o << "<rect x=\"" << num(x + 1) << "\" y=\"" << num(T + PH - bh) << "\" width=\"" << num(std::max(bw - 2, 1.0))
        << "\" height=\"" << num(bh) << "\" fill=\"#3b7dd8\"><title>" << h(range) << ": " << fmt_count(bs[i].count)
        << "</title></rect>";
      const double lx = x + bw / 2, ly = T + PH + 10;
      o << "<text x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" text-anchor=\"end\" transform=\"rotate(-45 "
        << num(lx) << " " << num(ly) << ")\">" << h(fmt_duration_ms_label(bs[i].lo_ns)) << "</text>";
    }
  }
  o << "</svg>";
}

void cache_table(std::ostream& o, const std::vector<CallGroup>& gs) {
  if (gs.empty()) {
    o << "<p class=\"note\">No cache commands.</p>";
    return;
  }
  o << "<table><tr><th class=n>Rank</th><th>System</th><th>Command</th><th class=n>Calls</th><th class=n>Misses</th>"
       "<th class=n>Total ms</th><th class=n>Share</th><th class=n>Avg ms</th><th class=n>p95 ms</th>"
       "<th class=n>Max ms</th><th class=n>Errors</th></tr>";
  for (size_t i = 0; i < gs.size(); ++i) {
    const auto& g = gs[i];
    o << "<tr><td class=n>" << i + 1 << "</td><td>" << h(g.host) << "</td><td class=code>" << hs(g.example, 200)
      << "</td><td class=n>" << fmt_count(g.calls) << (g.summarized ? " (" + fmt_count(g.summarized) + " folded)" : "")
      << "</td><td class=n>" << fmt_count(g.misses) << "</td><td class=n>" << fmt_ms(g.total_ns) << "</td><td class=n>"
      << fmt_pct(g.share) << "</td><td class=n>" << fmt_ms(g.avg_ns) << "</td><td class=n>" << fmt_ms(g.p95_ns)
      << "</td><td class=n>" << fmt_ms(g.max_ns) << "</td><td class=n>" << fmt_count(g.errors) << "</td></tr>";
  }
  o << "</table>";
}

void group_table(std::ostream& o, const std::vector<CallGroup>& gs, bool is_call) {
  if (gs.empty()) {
    o << "<p class=\"note\">" << (is_call ? "No outbound calls." : "No SQL statements.") << "</p>";
    return;
  }
  o << "<table><tr><th class=n>Rank</th>"
    << (is_call ? "<th>Host</th><th>Path</th>" : "<th>Fingerprint</th>")
    << "<th class=n>Calls</th><th class=n>Total ms</th><th class=n>Share</th><th class=n>Avg ms</th>"
       "<th class=n>p95 ms</th><th class=n>Max ms</th>"
    << (is_call ? "<th>Status codes</th>" : "<th class=n>Rows</th>") << "<th class=n>Errors</th>"
    << (is_call ? "" : "<th>Example</th>") << "</tr>";
  for (size_t i = 0; i < gs.size(); ++i) {
    const auto& g = gs[i];
    o << "<tr><td class=n>" << i + 1 << "</td>";
    if (is_call) o << "<td>" << hs(g.host, 80) << "</td><td class=code>" << hs(g.path, 200) << "</td>";
    else o << "<td class=code>" << h(g.key) << "</td>";
    o << "<td class=n>" << fmt_count(g.calls) << (g.summarized ? " (" + fmt_count(g.summarized) + " folded)" : "")
      << "</td><td class=n>" << fmt_ms(g.total_ns) << "</td><td class=n>" << fmt_pct(g.share) << "</td><td class=n>"
      << fmt_ms(g.avg_ns) << "</td><td class=n>" << fmt_ms(g.p95_ns) << "</td><td class=n>" << fmt_ms(g.max_ns)
      << "</td>";
    if (is_call) {
      std::string st;
      for (const auto& [code, n] : g.statuses) st += (st.empty() ? "" : ", ") + std::to_string(code) + "×" + fmt_count(n);
      o << "<td>" << h(st) << "</td>";
    } else {
      o << "<td class=n>" << fmt_count(g.rows) << "</td>";
    }
    o << "<td class=n>" << fmt_count(g.errors) << "</td>";
    if (!is_call) o << "<td class=code>" << hs(g.example, 400) << "</td>";
    o << "</tr>";
  }
  o << "</table>";
}

std::string shown(size_t shown, int64_t total) {
  return static_cast<int64_t>(shown) < total ? " <span class=note>(top " + std::to_string(shown) + " of " +
                                                  fmt_count(total) + ")</span>"
                                            : "";
}

// A table of text cells: every cell escaped; numeric columns (align 'r') right-aligned, code columns
// (align 'c') in monospace.
void cells_table(std::ostream& o, const Table& t, std::string_view align) {
  o << "<table><tr>";
  for (size_t i = 0; i < t.header.size(); ++i)
    o << "<th" << (i < align.size() && align[i] == 'r' ? " class=n" : "") << ">" << h(t.header[i]) << "</th>";
  o << "</tr>";
  for (const auto& r : t.rows) {
    o << "<tr>";
    for (size_t i = 0; i < r.size(); ++i) {
      const char a = i < align.size() ? align[i] : 'l';
      o << "<td" << (a == 'r' ? " class=n" : a == 'c' ? " class=code" : a == 'i' ? " class=id" : "") << ">"
        << hs(r[i], 300) << "</td>";
    }
    o << "</tr>";
  }
  o << "</table>";
}

// Baseline and current side by side: the five parts as two stacked bars on one scale.
void compare_bars(std::ostream& o, const Compare& c) {
  double most = 1;
  double tb = 0, tc = 0;
  for (const auto& p : c.by_part) tb += p.base_ns, tc += p.cur_ns;
  most = std::max({most, tb, tc});
  const double W = 700, L = 70;  // room on the right for the longer bar's total
  o << "<svg width=\"" << L + W + 90 << "\" height=\"78\" role=\"img\" aria-label=\"time per transaction\">";
  const char* side[] = {"baseline", "current"};
  for (int row = 0; row < 2; ++row) {
    double x = L;
    const double y = 4 + row * 28;
    o << "<text x=\"" << L - 6 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">" << side[row] << "</text>";
    for (size_t i = 0; i < c.by_part.size(); ++i) {
      const double v = row ? c.by_part[i].cur_ns : c.by_part[i].base_ns;
      const double w = v / most * W;
      if (w > 0)
        o << "<rect x=\"" << num(x) << "\" y=\"" << y << "\" width=\"" << num(w) << "\" height=\"22\" fill=\""
          << share_colour(static_cast<int>(i)) << "\"><title>" << part_label(c.by_part[i].part) << " "
          << fmt_ms(static_cast<int64_t>(v)) << " ms</title></rect>";
      x += w;
    }
    o << "<text x=\"" << num(x + 4) << "\" y=\"" << y + 15 << "\">"
      << fmt_ms(static_cast<int64_t>(row ? tc : tb)) << " ms</text>";
  }
  double x = L;
  for (size_t i = 0; i < c.by_part.size(); ++i) {
    o << "<rect x=\"" << x << "\" y=\"62\" width=\"12\" height=\"12\" fill=\"" << share_colour(static_cast<int>(i))
      << "\"/><text x=\"" << x + 16 << "\" y=\"73\">" << part_label(c.by_part[i].part) << "</text>";
    x += 140;
  }
  o << "</svg>";
}

void compare_html(const Report& r, std::ostream& o) {
  const CompareRows c = compare_rows(r);
  o << "<h2>Comparison with the baseline</h2><p><b>" << h(c.headline) << "</b></p><div class=meta>" << h(c.filters)
    << "</div>";
  cells_table(o, c.summary, "lrrr");
  o << "<p class=note>Mean time per transaction, baseline and current, on one scale:</p>";
  compare_bars(o, r.compare);
  o << "<h2>Where the difference comes from</h2>";
  cells_table(o, c.parts, "lrrr");
  o << "<p class=note>Ranked by contribution (" << fmt_count(r.compare.members) << " members):</p>";
  cells_table(o, c.members, "rlcrrrlii");
  o << "<p class=note>" << h(c.notes) << "</p>";
  o << "<h2>What appeared or vanished</h2>";
  if (c.changes.rows.empty()) o << "<p class=note>Nothing: the same statements, call targets and errors on both sides.</p>";
  else cells_table(o, c.changes, "llcrri");
  o << "<h2>Steps per transaction by kind</h2>";
  if (c.steps.rows.empty()) o << "<p class=note>No steps.</p>";
  else cells_table(o, c.steps, "lrr");
  o << "<p class=note>The sections below describe the current group.</p>\n";
}

}  // namespace

void render_html(const Report& r, std::ostream& o) {
  const Summary& s = r.summary;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width\">"
       "<title>txray slow-call report</title><style>"
    << kCss << "</style></head><body>\n";
  o << "<h1>txray slow-call report</h1><div class=meta>Store <code>" << h(r.db) << "</code> · filters: "
    << h(r.filters) << " · generated " << fmt_time(r.generated_unix_ns) << "</div>\n";
  if (r.has_compare) compare_html(r, o);

  o << "<h2>Summary</h2>";
  if (s.transactions) {
    o << "<div class=meta>" << fmt_time(s.first_start_unix_ns) << " – " << fmt_time(s.last_end_unix_ns);
    if (!s.apps.empty()) {
      o << " · apps:";
      for (const auto& a : s.apps) o << " " << h(a);
    }
    o << "</div>";
  }
  auto card = [&](const std::string& v, const char* label) {
    o << "<div class=card><b>" << h(v) << "</b><span>" << label << "</span></div>";
  };
  o << "<div class=cards>";
  card(fmt_count(s.transactions), "transactions");
  card(num(s.throughput_per_s, 2) + "/s", "throughput");
  card(fmt_count(s.errors) + " (" + fmt_pct(s.error_rate) + ")", "errors");
  card(fmt_ms(s.avg_ns), "avg ms");
  card(fmt_ms(s.pct.p50), "p50 ms");
  card(fmt_ms(s.pct.p90), "p90 ms");
  card(fmt_ms(s.pct.p95), "p95 ms");
  card(fmt_ms(s.pct.p99), "p99 ms");
  card(fmt_ms(s.pct.max), "max ms");
  card(fmt_count(s.unattributed_steps), "unattributed steps");
  o << "</div><p class=note>Percentiles by nearest rank: pN is the ⌈N/100 × n⌉-th fastest response time. "
       "Where the time went, as a share of the total response time ("
    << fmt_ms(s.shares.total_ns) << " ms):</p>";
  shares_bar(o, s.shares);
  if (s.unattributed_steps > 0) {
    std::string meaning = kUnattributedMeaning;
    meaning = h(meaning);
    // `txray show --unattributed` as code
    for (size_t at; (at = meaning.find('`')) != std::string::npos;) {
      const size_t end = meaning.find('`', at + 1);
      meaning = meaning.substr(0, at) + "<code>" + meaning.substr(at + 1, end - at - 1) + "</code>" + meaning.substr(end + 1);
    }
    o << "<p class=note><b>Unattributed steps: " << fmt_count(s.unattributed_steps) << "</b> ("
      << h(fmt_kind_counts(s.unattributed_by_kind)) << "): " << meaning << ".</p>";
  }
  if (s.dropped_transactions > 0) {
    o << "<p class=note><b>Dropped transactions: " << fmt_count(s.dropped_transactions) << "</b> ("
      << h(fmt_kind_counts(s.dropped_by_reason)) << "): " << h(kDroppedMeaning) << ".</p>";
  }
  if (s.shed_transactions > 0) {
    o << "<p class=note><b>Shed transactions: " << fmt_count(s.shed_transactions) << "</b> ("
      << h(fmt_kind_counts(s.shed_by_origin)) << "): " << h(kShedMeaning) << ".</p>";
  }
  if (!s.agent_cost.empty()) {
    o << "<p class=note><b>Agent cost</b> (" << h(kAgentCostMeaning) << "): ";
    for (size_t i = 0; i < s.agent_cost.size(); ++i) {
      const auto& a = s.agent_cost[i];
      o << (i ? "; " : "") << h(a.app) << " " << h(fmt_agent_cost(a.mean_ns(), a.share())) << " over "
        << fmt_count(a.transactions) << " transactions";
    }
    o << ".</p>";
  }

  o << "\n<div class=charts><div class=chart><h3>Response time over time (log scale)</h3>";
  scatter(o, r.scatter);
  o << "</div><div class=chart><h3>Response-time histogram (log-scale buckets)</h3>";
  histogram_svg(o, r.histogram);
  o << "</div></div>\n";

  o << "<h2>Slowest transactions</h2>";
  if (r.slowest.empty()) o << "<p class=note>None.</p>";
  else {
    o << "<table><tr><th class=n>#</th><th>Start</th><th>Name</th><th>Txid</th><th class=n>Response ms</th>"
         "<th class=n>CPU ms</th><th class=n>SQL ms</th><th class=n>Calls ms</th><th class=n>Status</th>"
         "<th>Dominant cost</th><th>Responsible step</th></tr>";
    for (size_t i = 0; i < r.slowest.size(); ++i) {
      const auto& x = r.slowest[i];
      o << "<tr><td class=n>" << i + 1 << "</td><td class=n>" << fmt_time(x.start_unix_ns) << "</td><td>"
        << hs(x.name, 120) << "</td><td class=id>" << hex16(x.txid) << "</td><td class=n>" << fmt_ms(x.elapsed_ns)
        << "</td><td class=n>" << fmt_ms(x.cpu_ns) << "</td><td class=n>" << fmt_ms(x.sql_ns) << "</td><td class=n>"
        << fmt_ms(x.call_ns) << "</td><td class=n>" << x.status
        << (x.error.empty() ? "" : "<br>" + hs(x.error, 80)) << "</td><td><span class=cost style=\"background:"
        << cost_colour(x.dominant) << "\">" << cost_name(x.dominant) << "</span> " << fmt_ms(x.dominant_ns)
        << " ms</td><td class=code>" << (x.step.empty() ? "–" : hs(x.step, 240));
      // The responsible step's stack (a failed or slow step), innermost frame first: short names, the
      // full one on hover.
      for (size_t f = 0; f < x.step_stack.size(); ++f)
        o << (f == 0 ? "<div class=stack>at " : "<br>\xe2\x86\x90 ") << "<span title=\""
          << hs(x.step_stack[f], 4000) << "\">" << hs(names::short_frame_name(x.step_stack[f]), 200) << "</span>"
          << (f + 1 == x.step_stack.size() ? "</div>" : "");
      o << "</td></tr>";
    }
    o << "</table>";
    bool any_hot = false;
    for (size_t i = 0; i < r.slowest.size(); ++i) {
      if (r.slowest[i].hot.empty()) continue;
      if (!any_hot) o << "<p>Hottest functions (CPU samples, share of the transaction's samples):</p><ul>";
      any_hot = true;
      o << "<li>#" << i + 1 << ": <span class=code>" << hs(names::short_frame_name(r.slowest[i].hot), 400) << "</span></li>";
    }
    if (any_hot) o << "</ul>";
  }

  o << "<h2>Transaction names" << shown(r.names.size(), r.name_groups) << "</h2>";
  if (r.names.empty()) o << "<p class=note>None.</p>";
  else {
    o << "<table><tr><th>Name</th><th>App</th><th class=n>Count</th><th class=n>Total ms</th><th class=n>Share</th>"
         "<th class=n>Avg ms</th><th class=n>p95 ms</th><th class=n>Max ms</th><th class=n>Errors</th></tr>";
    for (const auto& n : r.names)
      o << "<tr><td>" << hs(n.name, 160) << "</td><td>" << hs(n.app, 60) << "</td><td class=n>" << fmt_count(n.count)
        << "</td><td class=n>" << fmt_ms(n.total_ns) << "</td><td class=n>" << fmt_pct(n.share) << "</td><td class=n>"
        << fmt_ms(n.avg_ns) << "</td><td class=n>" << fmt_ms(n.p95_ns) << "</td><td class=n>" << fmt_ms(n.max_ns)
        << "</td><td class=n>" << fmt_count(n.errors) << "</td></tr>";
    o << "</table>";
  }

  o << "<h2>SQL by fingerprint" << shown(r.sql.size(), r.sql_groups) << "</h2>";
  group_table(o, r.sql, false);
  o << "<h2>Outbound calls by host and path" << shown(r.calls.size(), r.call_groups) << "</h2>";
  group_table(o, r.calls, true);
  o << "<h2>Cache commands by pattern" << shown(r.cache.size(), r.cache_groups) << "</h2>";
  cache_table(o, r.cache);
  o << "<p class=note>p95 and max cover the calls recorded as steps; calls folded past the per-transaction step "
       "limit count in calls, total and average only.</p>";

  o << "<h2>Repeated calls inside one transaction (N+1, " << r.repeat_threshold << " or more times)"
    << shown(r.repeated.size(), r.repeated_groups) << "</h2>";
  if (r.repeated.empty()) o << "<p class=note>None found.</p>";
  else {
    o << "<table><tr><th>Kind</th><th>Statement / target</th><th class=n>Transactions</th><th class=n>Executions</th>"
         "<th class=n>Max in one</th><th class=n>Total ms</th><th>Worst transactions (txid ×count)</th></tr>";
    for (const auto& p : r.repeated) {
      o << "<tr><td>" << h(p.kind) << "</td><td class=code>" << hs(p.example.empty() ? p.key : p.example, 300)
        << "</td><td class=n>" << fmt_count(p.transactions) << "</td><td class=n>" << fmt_count(p.executions)
        << "</td><td class=n>" << fmt_count(p.max_per_tx) << "</td><td class=n>" << fmt_ms(p.total_ns)
        << "</td><td class=id>";
      for (size_t i = 0; i < p.worst.size() && i < 8; ++i)
        o << (i ? "<br>" : "") << hex16(p.worst[i].txid) << " ×" << fmt_count(p.worst[i].count);
      if (p.worst.size() > 8) o << ", …";
      o << "</td></tr>";
    }
    o << "</table>";
  }
  o << "\n</body></html>\n";
}

}  // namespace txray::report
