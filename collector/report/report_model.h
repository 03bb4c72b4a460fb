// The computed report: plain values, one struct per section, filled by compute_report() and read by
// every renderer. Durations are nanoseconds (int64) here; renderers convert to milliseconds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace txray::report {

// Response-time percentiles by nearest rank: p(q) = the ceil(q/100 * n)-th smallest value (1-based).
struct Percentiles {
  int64_t p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};

// Where the response time went, summed over transactions; the five parts add up to total_ns exactly
// (see breakdown.h for the rule).
struct TimeShares {
  int64_t total_ns = 0;
  int64_t cpu_ns = 0;    // CPU in own code (CPU outside SQL, fetch and calls)
  int64_t sql_ns = 0;
  int64_t fetch_ns = 0;
  int64_t call_ns = 0;   // outbound calls
  int64_t wait_ns = 0;   // neither CPU nor a traced call: sockets, locks, sleeps, the scheduler
};

// The agent's own cost in one application's selected transactions (agent_cost.h): the estimate each
// transaction carries, over those that have one.
struct AppAgentCost {
  std::string app;
  int64_t transactions = 0;      // selected transactions with an estimate
  int64_t total_cost_ns = 0;
  int64_t total_elapsed_ns = 0;  // their response times
  double mean_ns() const { return transactions ? double(total_cost_ns) / double(transactions) : 0; }
  double share() const { return total_elapsed_ns > 0 ? double(total_cost_ns) / double(total_elapsed_ns) : 0; }
};

struct Summary {
  int64_t transactions = 0;
  int64_t errors = 0;
  int64_t first_start_unix_ns = 0;  // window actually covered by the selected transactions
  int64_t last_end_unix_ns = 0;
  double throughput_per_s = 0;      // transactions / (last_end - first_start)
  double error_rate = 0;            // errors / transactions
  int64_t avg_ns = 0;
  Percentiles pct;
  int64_t cpu_total_ns = 0;         // raw CPU time of the transactions' threads
  TimeShares shares;
  std::vector<std::string> apps;    // distinct apps seen
  // Steps the agent could not attribute to any request (unattributed.h): not part of any figure above.
  int64_t unattributed_steps = 0;
  std::map<std::string, int64_t> unattributed_by_kind;  // step kind -> count
  // Transactions the agents dropped or lost on the way (drops.h): missing from every figure above.
  int64_t dropped_transactions = 0;
  std::map<std::string, int64_t> dropped_by_reason;  // queue_full, send_failed, ... -> count
  // Transactions counted but not stored (shed.h): shed by the collector under load or sampled out by the
  // agents. Included in transactions, throughput, avg and pct above; in no other figure.
  int64_t shed_transactions = 0;
  std::map<std::string, int64_t> shed_by_origin;  // collector | agent -> count
  // The agent's own cost per application (empty when no selected transaction has an estimate).
  std::vector<AppAgentCost> agent_cost;
};

enum class Cost { Sql, Fetch, Call, SocketWait, Cpu, Idle };
const char* cost_name(Cost c);  // "SQL", "fetch", "outbound call", "socket wait", "CPU in own code", "idle"

struct SlowTx {
  int64_t id = 0;             // transactions.id
  int64_t txid = 0;           // print as 16 hex digits
  std::string app, name;
  int64_t start_unix_ns = 0;
  int64_t elapsed_ns = 0, cpu_ns = 0, sql_ns = 0, fetch_ns = 0, call_ns = 0;
  int status = 0;
  std::string error;
  Cost dominant = Cost::Idle;
  int64_t dominant_ns = 0;    // time attributed to the dominant cost
  int step_no = -1;           // profile row responsible (steps.no), -1 when none
  std::string step;           // what that row is, e.g. "SQL SELECT … [812 ms] x12"
  // CPU samples (docs/agent.md): the transaction's hottest functions over all its rows, e.g.
  // "deflate (libz.so.1) 81%, memcpy (libc.so.6) 9%"; empty without samples.
  std::string hot;
  // That row's stack when it failed or was slow (step_frames): its top frames, innermost first, each
  // "function (module+0xoff)"; empty when it has none.
  std::vector<std::string> step_stack;
};

inline constexpr int kStackFramesShown = 3;  // frames of the responsible step's stack in the slowest table

struct NameRow {
  std::string app, name;
  int64_t count = 0, total_ns = 0, avg_ns = 0, p95_ns = 0, max_ns = 0, errors = 0;
  double share = 0;           // of the total response time of all selected transactions
  int64_t shed = 0;           // of count: shed or sampled out (shed.h), in count, total, avg and p95
};

// One SQL fingerprint, one outbound call target (host + path) or one cache command pattern
// (Redis/memcached "GET item:?"), pt-query-digest style.
struct CallGroup {
  std::string key;            // SQL: fingerprint as 16 hex digits; call: "host/path"; cache: "redis:<fp>"
  std::string host, path;     // calls: host and path; cache: host is the system, "redis" or "memcached"
  std::string example;        // an example statement (masked by the agent), URL or command pattern
  int64_t calls = 0;          // recorded steps + calls folded into step summaries
  int64_t summarized = 0;     // of which folded (these have no individual durations)
  int64_t total_ns = 0, avg_ns = 0, p95_ns = 0, max_ns = 0;  // p95/max over recorded steps only
  double share = 0;           // of the total time of this table's kind
  int64_t rows = 0;           // SQL: rows returned (known counts only)
  int64_t errors = 0;
  int64_t misses = 0;         // cache: reads that found nothing (of the recorded steps; folded ones unknown)
  int64_t transactions = 0;   // distinct transactions that ran it
  std::map<int, int64_t> statuses;  // calls: HTTP status -> count (0 = no response)
};

// The N+1 pattern: one fingerprint / call target run K or more times inside one transaction.
struct RepeatRow {
  std::string kind;           // "SQL", "HTTP_CALL", "REDIS" or "MEMCACHED"
  std::string key, example;
  int64_t transactions = 0;   // transactions where it ran >= K times
  int64_t executions = 0;     // executions inside those transactions
  int64_t max_per_tx = 0;
  int64_t total_ns = 0;       // time of those executions
  struct Tx { int64_t id, txid; std::string name; int64_t count, elapsed_ns; };
  std::vector<Tx> worst;      // up to `top` transactions, most executions first
};

struct Bucket {
  int64_t lo_ns = 0, hi_ns = 0;  // [lo, hi); hi = INT64_MAX for the last open bucket
  int64_t count = 0;
};

// A down-sampled scatter for the HTML report: one cell per occupied (x, y) pixel block.
struct ScatterCell {
  int x = 0, y = 0;           // cell index, y on a log scale of the response time
  int64_t count = 0, errors = 0;
};
struct Scatter {
  int cols = 0, rows = 0;  // 200 x 80 cells
  int64_t x0_unix_ns = 0, x1_unix_ns = 0;   // time axis
  int64_t y0_ns = 0, y1_ns = 0;             // response time axis (log), cell rows evenly in log10
  std::vector<ScatterCell> cells;
};

// A comparison of two groups of transactions (compare.h computes it): the current group (the report's
// filters) against a baseline. The difference of the mean response times is decomposed exactly into
// parts (cpu, sql, fetch, call, waiting) and their members; contributions are current mean minus
// baseline mean, in ns (double: a mean need not be a whole number of ns), and add up to difference_ns.
struct CompareExample {     // a representative transaction of one side for one member (id 0: none)
  int64_t id = 0, txid = 0;
  int64_t elapsed_ns = 0;
  int64_t member_ns = 0;    // that member's time in it
};
struct ComparePart {
  std::string part;         // cpu | sql | fetch | call | waiting
  std::string key;          // the member: SQL text, host/path, "own code", a wait kind, "(n others)"
  std::string fingerprint;  // SQL / fetch: 16 hex digits when known
  double base_ns = 0, cur_ns = 0;        // mean per transaction of each side
  double contribution_ns = 0;            // cur_ns - base_ns
  bool counted = false;                  // SQL, fetch, call: per-call figures below are meaningful
  double base_per_tx = 0, cur_per_tx = 0;        // executions per transaction
  double base_per_call_ns = 0, cur_per_call_ns = 0;
  double count_effect_ns = 0, time_effect_ns = 0;  // (cur_n - base_n) * base_t and cur_n * (cur_t - base_t)
  CompareExample base_example, cur_example;
  int64_t folded_members = 0;            // "(n others)" lines: how many members folded into it
};
struct KindCount {          // steps of one kind per transaction, both sides
  std::string kind;
  double base_per_tx = 0, cur_per_tx = 0;
};
struct Change {             // what appeared in the current group or vanished from it
  std::string what;         // sql | call | error
  std::string key;          // SQL text, host/path, error text
  std::string fingerprint;  // sql
  int64_t count = 0;        // executions (sql, call) or failed transactions (error) on the side that has it
  int64_t transactions = 0; // transactions that have it
  CompareExample example;   // one of them
};
struct Compare {
  std::string baseline_filters;
  Summary baseline;           // the current group's summary is Report::summary
  double difference_ns = 0;   // mean response time: current - baseline
  std::vector<ComparePart> by_part;  // the five parts, fixed order: cpu, sql, fetch, call, waiting
  std::vector<ComparePart> parts;    // members, largest |contribution| first; past --top folded per part
  int64_t members = 0;               // members before the cut
  std::vector<KindCount> kinds;      // step kinds, most per transaction first
  std::vector<Change> appeared, vanished;
  bool cpu_samples = false;   // either side has CPU samples: CPU in own code is split by hot function
  CompareExample base_typical, cur_typical;  // the transaction nearest each side's mean response time
};

struct Report {
  std::string db;
  std::string filters;        // human-readable description of the filters applied
  int64_t generated_unix_ns = 0;
  int repeat_threshold = 5;
  Summary summary;
  std::vector<SlowTx> slowest;
  std::vector<NameRow> names;
  int64_t name_groups = 0;    // before the top cut
  std::vector<CallGroup> sql;
  int64_t sql_groups = 0;
  std::vector<CallGroup> calls;
  int64_t call_groups = 0;
  std::vector<CallGroup> cache;
  int64_t cache_groups = 0;
  std::vector<RepeatRow> repeated;
  int64_t repeated_groups = 0;
  std::vector<Bucket> histogram;
  Scatter scatter;
  bool has_compare = false;   // a baseline was given: compare holds the comparison
  Compare compare;
};

}  // namespace txray::report
