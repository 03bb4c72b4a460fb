// Where one transaction's response time went.
//
// Exclusive split (the parts add up to the response time exactly):
//   sql   = min(sql_ns, elapsed)                  wall time inside SQL statements
//   fetch = min(fetch_ns, elapsed - sql)          fetching rows after the first
//   call  = min(call_ns, elapsed - sql - fetch)   outbound calls (HTTP_CALL)
//   rest  = elapsed - sql - fetch - call
//   cpu   = min(cpu_ns, rest)                     CPU in own code: CPU burned inside an in-process call
//                                                 (SQLite) is already counted as that call's time
//   wait  = rest - cpu
// Refinements from the steps:
//   - the caller's own CPU inside a top-level outbound call (e.g. decompressing the response inside the
//     client library: the X-View case) is CPU in own code, not call time. Each row's CPU_T is spread
//     evenly over its GAP, and the part that falls inside the call's window moves from call to cpu
//     (in the summary's shares too);
//   - for the slowest transactions, wait splits into socket wait = min(wait, time with a top-level
//     outbound socket open, not spent on CPU or in another call, plus top-level DNS / DB_CONNECT
//     time) and idle = the remainder.
// The dominant cost is the largest of the six parts (ties: SQL, fetch, call, socket wait, CPU, idle).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_model.h"

namespace txray::report {

struct TxTotals {
  int64_t elapsed_ns = 0, cpu_ns = 0, sql_ns = 0, fetch_ns = 0, call_ns = 0;
};


// One profile row, as much as the dominant-cost rule needs.
struct StepRow {
  int no = 0, parent = -1;
  std::string kind;
  int64_t start_ns = 0, gap_ns = 0, cpu_ns = 0, elapsed_ns = 0, fetch_ns = 0;
  int64_t ref_id = 0;
  bool has_fingerprint = false;
  int64_t fingerprint = 0;
  int64_t text_id = -1;
  std::string text;         // texts.text, or "" when none
  std::string attributes;   // JSON object text, or ""
};

// The caller's own CPU inside its top-level outbound calls (each row's CPU_T spread evenly over its
// GAP). Optionally the call holding the most of it.
int64_t own_cpu_in_calls(const std::vector<StepRow>& rows, const StepRow** biggest = nullptr,
                         int64_t* biggest_ns = nullptr);

// One transaction's exclusive split by the rule above (wait not split): sql + fetch + call + cpu + wait
// = max(elapsed, 0) exactly. call_cpu_ns is moved from call to cpu.
struct TimeSplit {
  int64_t sql = 0, fetch = 0, call = 0, cpu = 0, wait = 0;
};
TimeSplit split_time(const TxTotals& t, int64_t call_cpu_ns);

// Adds one transaction's exclusive split (socket wait not separated: it is part of wait_ns).
// call_cpu_ns: own_cpu_in_calls() of its rows, or 0 when it made no outbound call.
void add_shares(const TxTotals& t, int64_t call_cpu_ns, TimeShares& out);

// Calls folded into step_summaries for this transaction.
struct FoldedRow {
  std::string kind;
  bool has_fingerprint = false;
  int64_t fingerprint = 0;
  std::string text;
  int64_t count = 0, elapsed_ns = 0;
};

struct Dominant {
  Cost cost = Cost::Idle;
  int64_t ns = 0;
  int step_no = -1;
  std::string step;  // human-readable: what that row is and why it is responsible
  int64_t call_cpu_ns = 0;                  // own CPU moved out of call time
  int64_t socket_wait_ns = 0, idle_ns = 0;  // the split of wait
};

// Applies the rule above to a transaction with its rows (ordered by no) and folded calls.
Dominant dominant_cost(const TxTotals& t, const std::vector<StepRow>& rows,
                       const std::vector<FoldedRow>& folded);

}  // namespace txray::report
