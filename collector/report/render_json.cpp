#include "format.h"
#include "render.h"
#include "stats.h"

namespace txray::report {
namespace {

using json = nlohmann::ordered_json;

double ms(int64_t ns) { return to_ms(ns); }

enum class Group { Sql, Call, Cache };

json group_json(const CallGroup& g, size_t rank, Group kind) {
  json j = {{"rank", rank},
            {"calls", g.calls},
            {"summarized", g.summarized},
            {"transactions", g.transactions},
            {"total_ms", ms(g.total_ns)},
            {"share", g.share},
            {"avg_ms", ms(g.avg_ns)},
            {"p95_ms", ms(g.p95_ns)},
            {"max_ms", ms(g.max_ns)},
            {"errors", g.errors},
            {"example", g.example}};
  if (kind == Group::Cache) {
    j["system"] = g.host;  // its pattern is the example
    j["key"] = g.key;
    j["misses"] = g.misses;
  } else if (kind == Group::Call) {
    j["host"] = g.host;
    j["path"] = g.path;
    json st = json::object();
    for (const auto& [code, n] : g.statuses) st[std::to_string(code)] = n;
    j["statuses"] = st;
  } else {
    j["fingerprint"] = g.key;
    j["rows"] = g.rows;
  }
  return j;
}

json summary_json(const Summary& s) {
  const TimeShares& t = s.shares;
  auto share = [&](int64_t v) { return t.total_ns ? static_cast<double>(v) / static_cast<double>(t.total_ns) : 0.0; };
  json j = {{"transactions", s.transactions},
                  {"errors", s.errors},
                  {"error_rate", s.error_rate},
                  {"throughput_per_s", s.throughput_per_s},
                  {"first_start", s.transactions ? fmt_time(s.first_start_unix_ns) : ""},
                  {"last_end", s.transactions ? fmt_time(s.last_end_unix_ns) : ""},
                  {"avg_ms", ms(s.avg_ns)},
                  {"p50_ms", ms(s.pct.p50)},
                  {"p90_ms", ms(s.pct.p90)},
                  {"p95_ms", ms(s.pct.p95)},
                  {"p99_ms", ms(s.pct.p99)},
                  {"max_ms", ms(s.pct.max)},
                  {"cpu_ms", ms(s.cpu_total_ns)},
                  {"apps", s.apps},
                  {"time_ms",
                   {{"total", ms(t.total_ns)},
                    {"cpu", ms(t.cpu_ns)},
                    {"sql", ms(t.sql_ns)},
                    {"fetch", ms(t.fetch_ns)},
                    {"calls", ms(t.call_ns)},
                    {"waiting", ms(t.wait_ns)}}},
                  {"share",
                   {{"cpu", share(t.cpu_ns)},
                    {"sql", share(t.sql_ns)},
                    {"fetch", share(t.fetch_ns)},
                    {"calls", share(t.call_ns)},
                    {"waiting", share(t.wait_ns)}}}};
  j["unattributed_steps"] = s.unattributed_steps;
  json by_kind = json::object();
  for (const auto& [kind, n] : s.unattributed_by_kind) by_kind[kind] = n;
  j["unattributed_by_kind"] = by_kind;
  j["dropped_transactions"] = s.dropped_transactions;
  json by_reason = json::object();
  for (const auto& [reason, n] : s.dropped_by_reason) by_reason[reason] = n;
  j["dropped_by_reason"] = by_reason;
  j["shed_transactions"] = s.shed_transactions;
  json by_origin = json::object();
  for (const auto& [origin, n] : s.shed_by_origin) by_origin[origin] = n;
  j["shed_by_origin"] = by_origin;
  json cost = json::array();  // the agent's own cost per application (an estimate)
  for (const auto& a : s.agent_cost)
    cost.push_back({{"app", a.app},
                    {"transactions", a.transactions},
                    {"mean_ns", a.mean_ns()},
                    {"share", a.share()}});
  j["agent_cost"] = cost;
  return j;
}

json example_json(const CompareExample& e) {
  if (e.id == 0) return nullptr;
  return {{"id", e.id}, {"txid", hex16(e.txid)}, {"elapsed_ms", ms(e.elapsed_ns)}, {"member_ms", ms(e.member_ns)}};
}

json part_json(const ComparePart& p) {
  json j = {{"part", p.part}, {"key", p.key}, {"contribution_ms", p.contribution_ns / 1e6},
            {"baseline_ms", p.base_ns / 1e6}, {"current_ms", p.cur_ns / 1e6}};
  if (!p.fingerprint.empty()) j["fingerprint"] = p.fingerprint;
  if (p.counted) {
    j["baseline_per_tx"] = p.base_per_tx;
    j["current_per_tx"] = p.cur_per_tx;
    j["baseline_ms_per_call"] = p.base_per_call_ns / 1e6;
    j["current_ms_per_call"] = p.cur_per_call_ns / 1e6;
    j["count_effect_ms"] = p.count_effect_ns / 1e6;
    j["time_effect_ms"] = p.time_effect_ns / 1e6;
  }
  if (p.folded_members) j["members"] = p.folded_members;
  else j["examples"] = {{"baseline", example_json(p.base_example)}, {"current", example_json(p.cur_example)}};
  return j;
}

json changes_json(const std::vector<Change>& cs) {
  json out = {{"sql", json::array()}, {"calls", json::array()}, {"errors", json::array()}};
  for (const auto& c : cs) {
    json j = {{"key", c.key}};
    if (!c.fingerprint.empty()) j["fingerprint"] = c.fingerprint;
    j[c.what == "error" ? "transactions" : "calls"] = c.count;
    if (c.what != "error") j["transactions"] = c.transactions;
    j["example"] = example_json(c.example);
    out[c.what == "sql" ? "sql" : c.what == "call" ? "calls" : "errors"].push_back(j);
  }
  return out;
}

json compare_json(const Compare& c, const Summary& current) {
  json j;
  j["baseline_filters"] = c.baseline_filters;
  j["baseline"] = summary_json(c.baseline);
  j["current"] = summary_json(current);
  j["difference_ms"] = c.difference_ns / 1e6;
  j["by_part"] = json::array();
  for (const auto& p : c.by_part)
    j["by_part"].push_back({{"part", p.part}, {"baseline_ms", p.base_ns / 1e6}, {"current_ms", p.cur_ns / 1e6},
                            {"contribution_ms", p.contribution_ns / 1e6}});
  j["parts"] = json::array();
  for (const auto& p : c.parts) j["parts"].push_back(part_json(p));
  j["members"] = c.members;
  j["cpu_samples"] = c.cpu_samples;
  j["steps_per_tx"] = json::array();
  for (const auto& k : c.kinds)
    j["steps_per_tx"].push_back({{"kind", k.kind}, {"baseline", k.base_per_tx}, {"current", k.cur_per_tx}});
  j["appeared"] = changes_json(c.appeared);
  j["vanished"] = changes_json(c.vanished);
  j["examples"] = {{"baseline", example_json(c.base_typical)}, {"current", example_json(c.cur_typical)}};
  return j;
}

}  // namespace

json to_json(const Report& r) {
  const Summary& s = r.summary;
  json j;
  j["report"] = {{"db", r.db},
                 {"generated", fmt_time(r.generated_unix_ns)},
                 {"filters", r.filters},
                 {"repeat_threshold", r.repeat_threshold},
                 {"percentile_method", "nearest-rank"}};
  j["summary"] = summary_json(s);
  if (r.has_compare) j["compare"] = compare_json(r.compare, s);

  j["slowest"] = json::array();
  for (const auto& x : r.slowest)
    j["slowest"].push_back({{"id", x.id},
                            {"txid", hex16(x.txid)},
                            {"app", x.app},
                            {"name", x.name},
                            {"start", fmt_time(x.start_unix_ns)},
                            {"elapsed_ms", ms(x.elapsed_ns)},
                            {"cpu_ms", ms(x.cpu_ns)},
                            {"sql_ms", ms(x.sql_ns)},
                            {"fetch_ms", ms(x.fetch_ns)},
                            {"calls_ms", ms(x.call_ns)},
                            {"status", x.status},
                            {"error", x.error},
                            {"dominant", cost_name(x.dominant)},
                            {"dominant_ms", ms(x.dominant_ns)},
                            {"step_no", x.step_no},
                            {"hot", x.hot},
                            {"step", x.step},
                            {"step_stack", x.step_stack}});
  j["names"] = json::array();
  for (const auto& n : r.names)
    j["names"].push_back({{"app", n.app},
                          {"name", n.name},
                          {"count", n.count},
                          {"total_ms", ms(n.total_ns)},
                          {"share", n.share},
                          {"avg_ms", ms(n.avg_ns)},
                          {"p95_ms", ms(n.p95_ns)},
                          {"max_ms", ms(n.max_ns)},
                          {"errors", n.errors},
                          {"shed", n.shed}});
  j["sql"] = json::array();
  for (size_t i = 0; i < r.sql.size(); ++i) j["sql"].push_back(group_json(r.sql[i], i + 1, Group::Sql));
  j["calls"] = json::array();
  for (size_t i = 0; i < r.calls.size(); ++i) j["calls"].push_back(group_json(r.calls[i], i + 1, Group::Call));
  j["cache"] = json::array();
  for (size_t i = 0; i < r.cache.size(); ++i) j["cache"].push_back(group_json(r.cache[i], i + 1, Group::Cache));
  j["repeated"] = json::array();
  for (const auto& p : r.repeated) {
    json worst = json::array();
    for (const auto& w : p.worst)
      worst.push_back({{"id", w.id}, {"txid", hex16(w.txid)}, {"name", w.name}, {"count", w.count},
                       {"elapsed_ms", ms(w.elapsed_ns)}});
    j["repeated"].push_back({{"kind", p.kind},
                             {"key", p.key},
                             {"example", p.example},
                             {"transactions", p.transactions},
                             {"executions", p.executions},
                             {"max_per_tx", p.max_per_tx},
                             {"total_ms", ms(p.total_ns)},
                             {"worst", worst}});
  }
  j["histogram"] = json::array();
  for (const auto& b : r.histogram)
    j["histogram"].push_back({{"lo_ms", ms(b.lo_ns)},
                              {"hi_ms", b.hi_ns == INT64_MAX ? json(nullptr) : json(ms(b.hi_ns))},
                              {"count", b.count}});
  j["groups"] = {{"names", r.name_groups}, {"sql", r.sql_groups}, {"calls", r.call_groups},
                 {"cache", r.cache_groups}, {"repeated", r.repeated_groups}};
  return j;
}

void render_json(const Report& r, std::ostream& out) {
  // Step texts come from traced programs and may not be valid UTF-8: replace, never throw.
  out << to_json(r).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
}

}  // namespace txray::report
