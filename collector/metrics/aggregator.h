// The metrics stage's core: RED figures per application and transaction name, per SQL statement and per
// call target, aggregated from decoded batches as the receiver accepted them — before load shedding, so
// shed transactions are in every figure, and the agents' head-sampled counts too. No I/O, no clock:
// render() formats what was added, as Prometheus text or OpenMetrics (with exemplars).
//
// Cardinality is bounded: past `max_names` (application, name) pairs, `max_sql` statements, `max_calls`
// call targets or `max_apps` applications, a new key goes into the `other` series of its application (or
// the application `other`) and txray_metrics_overflow_total counts what went there. Every figure stays
// exact in total; only the label that would have named it is lost.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "txray/v1/txray.pb.h"

namespace txray::metrics {

struct MetricsLimits {
  size_t max_apps = 100;
  size_t max_names = 2000;  // (application, transaction name) pairs, all applications together
  size_t max_sql = 500;     // (application, statement fingerprint)
  size_t max_calls = 500;   // (application, call target)
  size_t max_agents = 1000; // (application, host) pairs whose last batch is shown
};

// Upper bounds of the response-time histogram in nanoseconds: 100 µs to 60 s, then +Inf.
inline constexpr std::array<uint64_t, 18> kBucketBoundsNs = {
    100'000,       250'000,       500'000,        1'000'000,      2'500'000,      5'000'000,
    10'000'000,    25'000'000,    50'000'000,     100'000'000,    250'000'000,    500'000'000,
    1'000'000'000, 2'500'000'000, 5'000'000'000,  10'000'000'000, 30'000'000'000, 60'000'000'000};
inline constexpr size_t kBuckets = kBucketBoundsNs.size() + 1;  // the last one is +Inf

// The histogram bucket (0 … kBuckets-1) of a response time: the first bound it does not exceed.
size_t bucket_of(uint64_t elapsed_ns);

// Status class of a transaction: "1xx" … "5xx" from an HTTP status, "error" for a failure without one
// (error text, or a non-zero exit status in process mode), "2xx" for a success without a status.
enum CodeClass : uint8_t { k1xx, k2xx, k3xx, k4xx, k5xx, kError, kCodeClasses };
CodeClass code_class(const v1::Transaction& t);
const char* code_label(CodeClass c);

struct Exemplar {
  uint64_t txid = 0;  // 0: none yet
  uint64_t elapsed_ns = 0;
  uint64_t end_unix_ns = 0;
};

struct TxSeries {
  std::array<uint64_t, kCodeClasses> by_code{};
  std::array<uint64_t, kBuckets> buckets{};  // not cumulative; render() accumulates
  std::array<Exemplar, kBuckets> exemplars{};
  uint64_t count = 0, elapsed_ns = 0, cpu_ns = 0, sql_ns = 0, call_ns = 0, sql_count = 0, call_count = 0;
  uint64_t sampled_out = 0;  // of count: head-sampled by the agent, known only by count and time
};

struct StepSeries {
  std::string label;  // the statement (SQL) or the target (method host path), cut to a readable length
  uint64_t count = 0, elapsed_ns = 0, errors = 0;
};

struct AgentSeries {
  uint64_t batches = 0, transactions = 0, last_batch_unix_ns = 0;
};

class Aggregator {
 public:
  explicit Aggregator(MetricsLimits limits = {}) : limits_(limits) {}
  // Any thread; takes the lock once per batch.
  void add(const v1::Batch& batch);
  // Prometheus text format 0.0.4, or OpenMetrics 1.0 (counters with _total, exemplars, `# EOF`).
  // `extra` is appended before `# EOF` (the collector's own health: health.h).
  std::string render(bool openmetrics, const std::string& extra = {}) const;

  // For tests: how many keys of each kind exist (the `other` series included).
  size_t name_series() const;
  size_t sql_series() const;
  size_t call_series() const;
  TxSeries tx(const std::string& app, const std::string& name) const;  // a copy, zero when absent

 private:
  // Keyed by a hash of the labels, probing on (rare) collisions, so that the lookup of a known series —
  // every transaction and every SQL/call step — allocates nothing on the receiving thread.
  struct TxEntry {
    std::string app, name;
    TxSeries s;
  };
  struct StepEntry {
    std::string app;
    uint64_t fingerprint;
    StepSeries s;
  };
  using TxKey = std::pair<std::string, std::string>;

  const std::string& app_label(const std::string& app);
  TxSeries* find_tx(const std::string& app, const std::string& name, uint64_t* free_slot);
  TxSeries& tx_series(const std::string& app, const std::string& name);
  StepSeries& step_series(std::unordered_map<uint64_t, StepEntry>& m, size_t limit, const char* kind,
                          const std::string& app, uint64_t fingerprint, const std::string& text, bool sql);
  void add_tx(const std::string& app, const v1::Transaction& t);

  MetricsLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, bool> apps_;  // known applications (the label is the name itself)
  std::unordered_map<uint64_t, TxEntry> tx_;
  size_t named_tx_ = 0;  // keys in tx_ other than the `other` ones
  std::unordered_map<uint64_t, StepEntry> sql_, calls_;
  size_t named_sql_ = 0, named_calls_ = 0;
  std::map<TxKey, AgentSeries> agents_;  // (app, host)
  std::map<std::pair<std::string, std::string>, uint64_t> overflow_;  // (app, kind) -> items put in `other`
};

}  // namespace txray::metrics
