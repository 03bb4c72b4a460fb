// Comparing two groups of transactions: why is the current group slower (or faster) than the baseline?
// A pure computation over the transactions and their rows (no SQLite here): compute.cpp feeds it from
// the store for `txray report --baseline-*`, and the viewer's comparison panel gets it through the same
// compute_report(). docs/report.md ("Comparing two groups") gives the definitions.
//
// Each transaction's response time is split exactly into members (decompose()):
//   the five parts of breakdown.h (sql, fetch, call, cpu, wait: they add up to the response time),
//   then each part into members:
//     sql     per statement (fingerprint, else text), in proportion to its executions' elapsed time
//             (folded executions included);
//     fetch   per statement, in proportion to its fetch time;
//     call    per outbound target (host + path), in proportion to the calls' elapsed time;
//     cpu     "own code" (schema v1 stores no CPU samples, so there are no hot functions to split by);
//     waiting the connection steps first: SOCKET (connect), DNS, DB_CONNECT at the top level of the
//             profile, each kind at most what is left of the waiting time; the rest is "other"
//             (reads and writes on sockets and files, locks, sleeps, the scheduler).
//   Integer shares: floor of the proportion, the remainder to the largest member, so the members of
//   a part add up to the part exactly.
// A member's contribution is (its time summed over the current group / current count) minus the same
// for the baseline, so the contributions add up to the difference of the mean response times exactly
// (up to double rounding). For SQL, calls and connection steps it splits further into a count effect
// (more executions per transaction) and a time effect (slower executions): see ComparePart.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "breakdown.h"
#include "report_model.h"

namespace txray::report {

// One transaction, with what the decomposition needs.
struct CompareTx {
  int64_t id = 0, txid = 0;
  TxTotals totals;
  std::string error;               // error text, "HTTP <status>" for a 5xx without one; "" when it succeeded
  std::vector<StepRow> rows;       // ordered by no (kind, parent, start, gap, cpu, elapsed, fetch,
                                   // fingerprint, text are used)
  std::vector<FoldedRow> folded;   // calls folded past the step limit
  // CPU samples of the transaction (docs/agent.md "CPU samples"): per hot function, and "(other
  // functions)" for a row's samples past its listed ones; empty without samples. They split the
  // transaction's CPU in own code by function, in proportion to their samples.
  struct Hot {
    std::string function, module;
    int64_t samples = 0;
  };
  std::vector<Hot> hot;
};

// One member of one transaction's response time.
struct Member {
  std::string part;         // cpu | sql | fetch | call | waiting
  std::string id;           // grouping key across transactions (fingerprint or text, host/path, kind)
  std::string key;          // what to show: SQL text, host/path, "own code", "connect (SOCKET)", …
  std::string fingerprint;  // sql / fetch: 16 hex digits, or ""
  int64_t ns = 0;           // its share of the response time
  int64_t count = 0;        // executions (sql, call, connection steps); 0 otherwise
};

// The members of one transaction: their ns add up to max(elapsed, 0) exactly.
std::vector<Member> decompose(const CompareTx& t);

// One side of a comparison, accumulated transaction by transaction (memory: a few samples per member,
// not per transaction).
class CompareSide {
 public:
  void add(const CompareTx& t);
  int64_t transactions() const { return n_; }

 private:
  friend Compare compare_sides(const CompareSide& base, const CompareSide& cur, int top);
  struct Sample {
    int64_t ns, id, txid, elapsed;
  };
  struct Reservoir {  // a deterministic sample of up to kCap (member ns, transaction)
    int64_t seen = 0;
    std::vector<Sample> s;
    void add(const Sample& x);
    CompareExample nearest(double mean) const;  // the sample closest to mean
  };
  struct Acc {
    std::string part, key, fingerprint;
    int64_t ns = 0, count = 0, transactions = 0;
    Reservoir examples;
  };
  int64_t n_ = 0;
  int64_t total_ns_ = 0;
  Reservoir typical_;                                   // response times
  std::unordered_map<std::string, Acc> members_;        // part + '\x1f' + Member::id
  std::map<std::string, int64_t> kinds_;                // step kind -> rows (+ folded)
  struct Err {
    int64_t count = 0;
    CompareExample example;
  };
  std::map<std::string, Err> errors_;
};

// The comparison of cur against base: everything of Compare except baseline_filters and baseline (the
// caller's summaries). top: member lines kept; the rest are folded per part into "(n others)" lines, so
// the parts still add up to difference_ns.
Compare compare_sides(const CompareSide& base, const CompareSide& cur, int top);

}  // namespace txray::report
