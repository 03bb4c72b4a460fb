#include "aggregator.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "txray/v1/shed_bucket.h"

namespace txray::metrics {

namespace {

constexpr uint64_t kOtherFingerprint = ~uint64_t{0};  // the `other` statement/target of an application
const std::string kOther = "other";
constexpr size_t kLabelMax = 120;  // statement and target labels: enough to recognise, short enough to read

// Where a head-sampled count goes in the histogram: the low end of its ShedCount bucket (at most 25% wide).
uint64_t shed_low_ns(uint32_t b) { return b >= v1::kShedBuckets ? UINT64_MAX : v1::shed_bucket_lo(b); }

std::string cut_label(const std::string& s, bool stop_at_query) {
  std::string out;
  size_t end = s.size();
  if (stop_at_query) end = std::min(end, s.find('?'));  // a call's query string is per request
  for (size_t i = 0; i < end && out.size() < kLabelMax; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
  }
  // Do not leave half of a UTF-8 sequence at the cut.
  while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
  if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0xC0) out.pop_back();
  return out;
}

void escape_into(std::string& out, const std::string& v) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

// Label values must be valid UTF-8 for Prometheus: invalid bytes become '?'.
std::string valid_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (!ok) {
      out += '?';
      ++i;
      continue;
    }
    out.append(s, i, n);
    i += n;
  }
  return out;
}

struct Out {
  std::string s;
  bool om;
  void family(const char* name, const char* type, const char* help) {
    // OpenMetrics names a counter family without its _total suffix; the text format names the sample.
    std::string fam = name;
    if (om && std::string_view(type) == "counter" && fam.size() > 6 && fam.ends_with("_total")) fam.resize(fam.size() - 6);
    s += "# HELP " + fam + " " + help + "\n# TYPE " + fam + " " + type + "\n";
  }
  void labels(std::initializer_list<std::pair<const char*, const std::string*>> ls) {
    if (ls.size() == 0) return;
    s += '{';
    bool first = true;
    for (auto& [k, v] : ls) {
      if (!first) s += ',';
      first = false;
      s += k;
      s += "=\"";
      escape_into(s, *v);
      s += '"';
    }
    s += '}';
  }
  void value(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, " %" PRIu64 "\n", v);
    s += b;
  }
  void seconds(uint64_t ns) {
    char b[40];
    std::snprintf(b, sizeof b, " %" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u, ns % 1000000000u);
    s += b;
  }
};

std::string le_label(size_t i) {
  if (i >= kBucketBoundsNs.size()) return "+Inf";
  char b[32];
  std::snprintf(b, sizeof b, "%g", static_cast<double>(kBucketBoundsNs[i]) / 1e9);
  return b;
}

}  // namespace

size_t bucket_of(uint64_t ns) {
  return static_cast<size_t>(std::lower_bound(kBucketBoundsNs.begin(), kBucketBoundsNs.end(), ns) - kBucketBoundsNs.begin());
}

CodeClass code_class(const v1::Transaction& t) {
  if (t.kind() != "process" && t.status() >= 100 && t.status() < 600) return static_cast<CodeClass>(t.status() / 100 - 1);
  if (!t.error().empty() || (t.kind() == "process" && t.status() != 0)) return kError;
  return k2xx;
}

const char* code_label(CodeClass c) {
  static const char* names[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "error"};
  return names[c];
}

const std::string& Aggregator::app_label(const std::string& app) {
  auto it = apps_.find(app);
  if (it != apps_.end()) return it->first;
  if (apps_.size() >= limits_.max_apps) {
    ++overflow_[{kOther, "app"}];
    return kOther;
  }
  return apps_.emplace(app, true).first->first;
}

namespace {
uint64_t mix(uint64_t a, uint64_t b) { return (a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2))) * 0xff51afd7ed558ccdull; }
uint64_t hash_str(const std::string& s) { return std::hash<std::string>()(s); }
}  // namespace

TxSeries* Aggregator::find_tx(const std::string& app, const std::string& name, uint64_t* free_slot) {
  for (uint64_t h = mix(hash_str(app), hash_str(name));; ++h) {
    auto it = tx_.find(h);
    if (it == tx_.end()) {
      *free_slot = h;
      return nullptr;
    }
    if (it->second.name == name && it->second.app == app) return &it->second.s;
  }
}

TxSeries& Aggregator::tx_series(const std::string& app, const std::string& raw_name) {
  uint64_t slot;
  if (TxSeries* s = find_tx(app, raw_name, &slot)) return *s;
  // A new key: its label must be valid UTF-8 (proto3 parsing already insists, this is for other callers).
  std::string name = valid_utf8(raw_name);
  if (name != raw_name)
    if (TxSeries* s = find_tx(app, name, &slot)) return *s;
  if (name != kOther && named_tx_ >= limits_.max_names) {
    ++overflow_[{app, "name"}];
    if (TxSeries* s = find_tx(app, kOther, &slot)) return *s;
    name = kOther;
  }
  if (name != kOther) ++named_tx_;
  return tx_.emplace(slot, TxEntry{app, std::move(name), {}}).first->second.s;
}

StepSeries& Aggregator::step_series(std::unordered_map<uint64_t, StepEntry>& m, size_t limit, const char* kind,
                                    const std::string& app, uint64_t fingerprint, const std::string& text, bool sql) {
  auto find = [&](uint64_t fp, uint64_t* slot) -> StepSeries* {
    for (uint64_t h = mix(hash_str(app), fp);; ++h) {
      auto it = m.find(h);
      if (it == m.end()) {
        *slot = h;
        return nullptr;
      }
      if (it->second.fingerprint == fp && it->second.app == app) return &it->second.s;
    }
  };
  uint64_t slot;
  if (StepSeries* s = find(fingerprint, &slot)) return *s;
  size_t& named = sql ? named_sql_ : named_calls_;
  if (named >= limit || fingerprint == kOtherFingerprint) {
    ++overflow_[{app, kind}];
    if (StepSeries* s = find(kOtherFingerprint, &slot)) return *s;
    StepSeries& o = m.emplace(slot, StepEntry{app, kOtherFingerprint, {}}).first->second.s;
    o.label = kOther;
    return o;
  }
  ++named;
  StepSeries& s = m.emplace(slot, StepEntry{app, fingerprint, {}}).first->second.s;
  s.label = valid_utf8(cut_label(text, !sql));
  return s;
}

void Aggregator::add_tx(const std::string& app, const v1::Transaction& t) {
  TxSeries& s = tx_series(app, t.name());
  size_t b = bucket_of(t.elapsed_ns());
  ++s.count;
  ++s.by_code[code_class(t)];
  ++s.buckets[b];
  s.exemplars[b] = Exemplar{t.txid(), t.elapsed_ns(), t.start_unix_ns() + t.elapsed_ns()};
  s.elapsed_ns += t.elapsed_ns();
  s.cpu_ns += t.cpu_ns();
  s.sql_ns += t.sql_ns();
  s.call_ns += t.call_ns();
  s.sql_count += t.sql_count();
  s.call_count += t.call_count();
  for (const auto& st : t.steps()) {
    if (st.kind() != v1::SQL && st.kind() != v1::HTTP_CALL) continue;
    bool sql = st.kind() == v1::SQL;
    StepSeries& ss = sql ? step_series(sql_, limits_.max_sql, "sql", app, st.fingerprint(), st.text(), true)
                         : step_series(calls_, limits_.max_calls, "call", app, st.fingerprint(), st.text(), false);
    ++ss.count;
    ss.elapsed_ns += st.elapsed_ns();
    if (!st.error().empty() || (!sql && st.status() >= 500)) ++ss.errors;
  }
  for (const auto& su : t.summary()) {  // steps folded past the step limit: their totals are exact
    if (su.kind() != v1::SQL && su.kind() != v1::HTTP_CALL) continue;
    bool sql = su.kind() == v1::SQL;
    StepSeries& ss = sql ? step_series(sql_, limits_.max_sql, "sql", app, su.fingerprint(), su.text(), true)
                         : step_series(calls_, limits_.max_calls, "call", app, su.fingerprint(), su.text(), false);
    ss.count += su.count();
    ss.elapsed_ns += su.elapsed_ns();
    ss.errors += su.errors();
  }
}

void Aggregator::add(const v1::Batch& batch) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string raw_app = valid_utf8(batch.agent().app());
  const std::string& app = app_label(raw_app);
  for (const auto& t : batch.transactions()) {
    if (t.kind() == "unattributed") continue;  // steps of no request: no request figure
    add_tx(app, t);
  }
  // Head-sampled transactions: known by count and total time per response-time bucket; all succeeded.
  for (const auto& sc : batch.sampled_out()) {
    if (sc.count() == 0) continue;
    TxSeries& s = tx_series(app, sc.name());
    s.count += sc.count();
    s.sampled_out += sc.count();
    s.by_code[k2xx] += sc.count();
    s.buckets[bucket_of(shed_low_ns(sc.bucket()))] += sc.count();
    s.elapsed_ns += sc.elapsed_ns();
  }
  TxKey agent{app, valid_utf8(batch.agent().host())};
  auto it = agents_.find(agent);
  if (it == agents_.end()) {
    if (agents_.size() >= limits_.max_agents) {
      ++overflow_[{app, "agent"}];
      agent.second = kOther;
    }
    it = agents_.try_emplace(agent).first;
  }
  ++it->second.batches;
  it->second.transactions += static_cast<uint64_t>(batch.transactions_size());
  it->second.last_batch_unix_ns = std::max<uint64_t>(it->second.last_batch_unix_ns, batch.sent_unix_ns());
}

size_t Aggregator::name_series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tx_.size();
}
size_t Aggregator::sql_series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sql_.size();
}
size_t Aggregator::call_series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_.size();
}
TxSeries Aggregator::tx(const std::string& app, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [h, e] : tx_)
    if (e.app == app && e.name == name) return e.s;
  return TxSeries{};
}

std::string Aggregator::render(bool om, const std::string& extra) const {
  Out o{{}, om};
  std::lock_guard<std::mutex> lock(mu_);
  // Sorted, so the output (and a test's golden text) does not depend on hashing.
  struct Row {
    TxKey first;
    const TxSeries* series;
  };
  std::vector<Row> rows;
  rows.reserve(tx_.size());
  for (const auto& [h, e] : tx_) rows.push_back(Row{{e.app, e.name}, &e.s});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.first < b.first; });
  std::vector<const Row*> txs;
  for (const auto& r : rows) txs.push_back(&r);

  o.family("txray_requests_total", "counter", "Transactions received, by status class (shed and head-sampled ones included).");
  for (auto* e : txs)
    for (size_t c = 0; c < kCodeClasses; ++c) {
      if (!e->series->by_code[c]) continue;
      std::string code = code_label(static_cast<CodeClass>(c));
      o.s += "txray_requests_total";
      o.labels({{"app", &e->first.first}, {"name", &e->first.second}, {"code", &code}});
      o.value(e->series->by_code[c]);
    }
  o.family("txray_request_duration_seconds", "histogram", "Response time of transactions.");
  std::vector<std::string> les;
  for (size_t i = 0; i < kBuckets; ++i) les.push_back(le_label(i));
  for (auto* e : txs) {
    const TxSeries& s = *e->series;
    uint64_t cum = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      cum += s.buckets[i];
      o.s += "txray_request_duration_seconds_bucket";
      o.labels({{"app", &e->first.first}, {"name", &e->first.second}, {"le", &les[i]}});
      if (om && s.exemplars[i].txid) {
        char b[96];
        const Exemplar& x = s.exemplars[i];
        std::snprintf(b, sizeof b, " %" PRIu64 " # {txid=\"%016" PRIx64 "\"} %" PRIu64 ".%09" PRIu64 "\n", cum, x.txid,
                      x.elapsed_ns / 1000000000u, x.elapsed_ns % 1000000000u);
        o.s += b;
      } else {
        o.value(cum);
      }
    }
    o.s += "txray_request_duration_seconds_sum";
    o.labels({{"app", &e->first.first}, {"name", &e->first.second}});
    o.seconds(s.elapsed_ns);
    o.s += "txray_request_duration_seconds_count";
    o.labels({{"app", &e->first.first}, {"name", &e->first.second}});
    o.value(s.count);
  }
  struct Sum {
    const char* name;
    const char* help;
    uint64_t TxSeries::*field;
    bool secs;
  };
  const Sum sums[] = {
      {"txray_request_cpu_seconds_total", "CPU time of the transactions' threads.", &TxSeries::cpu_ns, true},
      {"txray_request_sql_seconds_total", "Time in SQL statements.", &TxSeries::sql_ns, true},
      {"txray_request_call_seconds_total", "Time in outbound calls.", &TxSeries::call_ns, true},
      {"txray_request_sql_statements_total", "SQL statements executed.", &TxSeries::sql_count, false},
      {"txray_request_calls_total", "Outbound calls made.", &TxSeries::call_count, false},
      {"txray_requests_sampled_out_total", "Of the transactions, those the agents' head sampling only counted.",
       &TxSeries::sampled_out, false},
  };
  for (const auto& m : sums) {
    o.family(m.name, "counter", m.help);
    for (auto* e : txs) {
      o.s += m.name;
      o.labels({{"app", &e->first.first}, {"name", &e->first.second}});
      if (m.secs) o.seconds(e->series->*m.field);
      else o.value(e->series->*m.field);
    }
  }
  auto steps = [&](const std::unordered_map<uint64_t, StepEntry>& m, const char* prefix, const char* label,
                   const char* what) {
    std::vector<std::pair<std::pair<std::string, std::string>, const StepSeries*>> v;
    for (const auto& [h, e] : m) {
      const StepEntry& k = e;
      const StepSeries& s = e.s;
      char fp[20];
      std::snprintf(fp, sizeof fp, "%016" PRIx64, k.fingerprint);
      v.push_back({{k.app, k.fingerprint == kOtherFingerprint ? kOther : std::string(fp)}, &s});
    }
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::string base = prefix;
    for (int f = 0; f < 3; ++f) {
      std::string name = base + (f == 0 ? "_total" : f == 1 ? "_seconds_total" : "_errors_total");
      std::string help = std::string(what) + (f == 0 ? ", executed." : f == 1 ? ", time spent." : ", failed.");
      o.family(name.c_str(), "counter", help.c_str());
      for (auto& [k, s] : v) {
        o.s += name;
        o.labels({{"app", &k.first}, {"fingerprint", &k.second}, {label, &s->label}});
        if (f == 1) o.seconds(s->elapsed_ns);
        else o.value(f == 0 ? s->count : s->errors);
      }
    }
  };
  steps(sql_, "txray_sql", "statement", "SQL statements by fingerprint");
  steps(calls_, "txray_calls", "target", "Outbound calls by target");

  o.family("txray_agent_batches_total", "counter", "Batches received per application and host.");
  for (const auto& [k, a] : agents_) {
    o.s += "txray_agent_batches_total";
    o.labels({{"app", &k.first}, {"host", &k.second}});
    o.value(a.batches);
  }
  o.family("txray_agent_last_batch_timestamp_seconds", "gauge", "When the latest batch was sent (agent clock).");
  for (const auto& [k, a] : agents_) {
    o.s += "txray_agent_last_batch_timestamp_seconds";
    o.labels({{"app", &k.first}, {"host", &k.second}});
    o.seconds(a.last_batch_unix_ns);
  }
  o.family("txray_metrics_overflow_total", "counter",
           "Items counted in an `other` series because their kind's cardinality limit was reached.");
  for (const auto& [k, n] : overflow_) {
    o.s += "txray_metrics_overflow_total";
    o.labels({{"app", &k.first}, {"kind", &k.second}});
    o.value(n);
  }
  o.s += extra;
  if (om) o.s += "# EOF\n";
  return o.s;
}

}  // namespace txray::metrics
