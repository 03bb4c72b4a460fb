// Transactions counted but not stored (shed_counts, docs/schema.md): shed by the collector under load or
// sampled out by the agent's head sampling. The report adds them to its counts, throughput, mean and
// percentiles, so those stay right; every other figure (breakdowns, slowest, SQL, calls, histogram,
// scatter) is over the stored transactions only.
//
// Percentiles then: a shed count is a number of transactions in one response-time bucket (at most 25%
// wide) with their total response time; each counts as that many values equal to the bucket's mean,
// merged with the exact stored values, and the nearest rank is taken over the merged multiset. So a
// percentile that falls on a shed transaction is within its bucket's width (25%) of the true value; one
// that falls on a stored transaction is exact. Shed transactions are never slower than their app's
// recent p95, so p95 and above normally fall on stored ones.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report.h"
#include "report_model.h"
#include "sqlite_util.h"

namespace txray::report {

// Counted transactions of one (app, name) under the report's filters.
struct ShedGroup {
  std::string app, name;
  int64_t count = 0;
  int64_t elapsed_ns = 0;                              // their total response time
  std::vector<std::pair<int64_t, int64_t>> values;     // (bucket mean ns, count)
};

struct ShedSet {
  std::vector<ShedGroup> groups;
  std::map<std::string, int64_t> by_origin;  // collector | agent -> transactions
  int64_t count = 0;
  int64_t elapsed_ns = 0;
  int64_t first_minute_unix_ns = 0, last_minute_unix_ns = 0;
};

// The shed_counts rows under opt's filters: app exact, name substring, a minute whose span overlaps
// [since, until] (minute granularity at the edges), a bucket whose mean is at least min_ms. None when
// opt names transactions (tx_ids) or the store has no such table.
ShedSet load_shed(const Db& db, const Options& opt);

// Nearest-rank percentiles over the exact values (any order; sorted in place) merged with weighted
// values (value, count).
Percentiles merged_percentiles(std::vector<int64_t>& exact, std::vector<std::pair<int64_t, int64_t>> weighted);
// The q-th percentile (nearest rank) of that merged multiset; `exact` sorted, `weighted` sorted by value.
int64_t merged_rank(const std::vector<int64_t>& exact, const std::vector<std::pair<int64_t, int64_t>>& weighted,
                    double q);

// Adds the shed set to a summary computed from stored transactions: count, mean, percentiles (with the
// stored response times `elapsed`), error rate, throughput (over the stored transactions' window, or the
// shed minutes' when none was stored), shed_transactions and shed_by_origin.
void add_shed_to_summary(const ShedSet& shed, std::vector<int64_t> elapsed, Summary& s);

}  // namespace txray::report
