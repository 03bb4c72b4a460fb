// Plain value types the viewer's data layer hands around (no Qt widgets, no SQLite handles).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace txray::viewer {

// One dot of the scatter. app and name index into the dictionaries of PointBatch / PointSet.
struct TxPoint {
  int64_t end_ns;      // x: end_unix_ns
  int64_t elapsed_ns;  // y: response time
  int64_t id;          // transactions.id
  uint16_t name;
  uint8_t app;
  uint8_t error;       // 1 when the transaction failed (error text, or status >= 500)
};

// Step kind -> count.
using KindCounts = std::map<std::string, int64_t>;

// New rows of the transactions table (id > the previous batch's last id), in id order. Rows of kind
// 'unattributed' are no transactions but containers of the steps the agent could not attribute to any
// request (docs/schema.md): they give no dot, only their steps' counts.
struct PointBatch {
  std::vector<TxPoint> points;
  std::vector<std::string> apps;   // the whole dictionary so far (index = TxPoint::app)
  std::vector<std::string> names;  // the whole dictionary so far (index = TxPoint::name)
  int64_t last_id = 0;             // max(id) seen so far (containers included)
  bool more = false;               // true when the store has more rows to load right now
  KindCounts unattributed;         // unattributed steps of the containers among these rows, per step kind
  // Transactions counted but not stored (shed_counts: shed by the collector under load, sampled out by
  // the agents), the store's total when this batch was read; -1 when this batch did not read it.
  int64_t shed = -1;
};

// A rectangle of the scatter in data coordinates (inclusive bounds).
struct Box {
  int64_t t0 = 0, t1 = 0;  // end time, unix ns
  int64_t e0 = 0, e1 = 0;  // response time, ns
  bool contains(int64_t t, int64_t e) const { return t >= t0 && t <= t1 && e >= e0 && e <= e1; }
};

// One row of the transaction list.
struct TxSummary {
  int64_t id = 0;
  int64_t end_ns = 0;
  std::string app, name;
  int64_t elapsed_ns = 0, cpu_ns = 0, sql_ns = 0, fetch_ns = 0, call_ns = 0;
  int status = 0;
  std::string error;
  std::string client;
};

// One of a row's hottest functions (CPU samples, docs/agent.md "CPU samples").
struct HotFunction {
  std::string function, module;
  int64_t samples = 0;
};

// The samples of one stack, frames root first joined by ';' (a flame graph's input).
struct CpuStack {
  std::string folded;
  int64_t samples = 0;
};

// One frame of a step's stack (step_frames; docs/stacks.md).
struct Frame {
  std::string function;  // empty when unknown
  std::string module;
  int64_t offset = 0;
};

struct Step {
  int no = 0;
  int parent = -1;
  int depth = 0;  // nesting level (0 at the top), from the parent chain
  int64_t cpu_samples = 0;        // CPU samples in the row's GAP
  std::vector<HotFunction> hot;   // its hottest functions, most samples first
  std::string kind;
  int64_t start_offset_ns = 0, gap_ns = 0, cpu_ns = 0, elapsed_ns = 0;
  int64_t bytes_read = 0, bytes_written = 0;
  std::string text, error, attributes;
  std::optional<int64_t> ref_id, rows, fetch_ns, status, changes, callee_tx_id;
  std::vector<Frame> stack;  // a failed or slow step's stack, innermost first; empty when none
};

struct StepSummaryRow {
  std::string kind, text;
  int64_t count = 0, elapsed_ns = 0, errors = 0;
};

// Everything the profile pane shows for one transaction.
struct Profile {
  TxSummary tx;
  int64_t txid = 0, parent_span_id = 0, start_ns = 0;
  std::string trace_id, kind, attributes;
  std::string host, program;
  int64_t pid = 0, tid = 0;
  int64_t bytes_read = 0, bytes_written = 0;
  int sql_count = 0, call_count = 0;
  std::optional<int64_t> caller_tx_id;  // the transaction whose HTTP_CALL this one served, if linked
  std::vector<Step> steps;
  std::vector<StepSummaryRow> summaries;
  // The agent's own cost (table agent_cost; nullopt for stores and agents without it), and the mean of
  // its application's latest transactions that have one.
  std::optional<int64_t> agent_cost_ns;
  struct AppAgentCost {
    int64_t transactions = 0;
    double mean_cost_ns = 0;
    double share = 0;  // sum of costs / sum of response times
  };
  std::optional<AppAgentCost> app_agent_cost;
  // CPU samples (empty for a store or an agent without them).
  int64_t cpu_samples = 0, cpu_samples_dropped = 0;
  std::vector<CpuStack> cpu_stacks;
  std::string cpu_sampler;
};

using PointBatchPtr = std::shared_ptr<const PointBatch>;
using TxListPtr = std::shared_ptr<const std::vector<TxSummary>>;
using ProfilePtr = std::shared_ptr<const Profile>;

}  // namespace txray::viewer
