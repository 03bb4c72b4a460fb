// txray slow-call reports: the library behind `txray report` and the viewer's File → Export report….
// It reads a txray store (collector/store/schema.sql) read-only with plain sqlite3 and writes one report
// in Markdown, HTML, CSV or JSON. All numbers are computed once (report_model.h) and then rendered, so
// every format shows the same figures. See docs/report.md for the definitions (percentiles, dominant
// cost, N+1).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace txray::report {

struct Options {
  std::string db;                                       // store path
  std::optional<int64_t> since_unix_ns, until_unix_ns;  // by transaction end time (inclusive)
  std::string app, name;                                // exact app; substring of the name
  double min_ms = 0;                                    // only transactions at least this slow
  int top = 20;                                         // rows per ranked table
  int repeat_threshold = 5;                             // N+1: K or more times in one transaction
  std::string format = "md";                            // md | html | csv | json
  std::string table;  // csv: one table only (summary, slowest, names, sql, calls, repeated, histogram)
  std::vector<int64_t> tx_ids;  // when not empty: exactly these transactions (transactions.id, the
                                // store-local row id), still subject to the other filters
  // Unattributed steps (steps of no transaction) are counted under the app and time filters only.

  // A comparison (docs/report.md, "Comparing two groups"): when set, these filters select a baseline
  // group and the report compares the group above (the current one) with it. A time bound given here
  // replaces both of the current ones (the other is then open); app and name given replace the current
  // ones; min_ms applies to both; tx_ids are the baseline's own (the viewer's second selection).
  struct Baseline {
    std::optional<int64_t> since_unix_ns, until_unix_ns;
    std::optional<std::string> app, name;
    std::vector<int64_t> tx_ids;
  };
  std::optional<Baseline> baseline;
  bool compare_only = false;  // with a baseline: compute the two summaries and the comparison only (the
                              // viewer's panel); slowest, names, SQL, calls, N+1, histogram stay empty
};

// The options that select the baseline group of opt (opt.baseline must be set).
Options baseline_options(const Options& opt);

// Writes the report to out. Returns "" on success, else a one-line error (nothing useful written).
// format "csv" needs opt.table here (one table per stream); use write_report_dir for all tables.
std::string write_report(const Options& opt, std::ostream& out);

// CSV only: writes every table as <dir>/<table>.csv (creating dir). Returns "" or a one-line error.
std::string write_report_dir(const Options& opt, const std::string& dir);

// The CSV table names, in report order.
const std::vector<std::string>& table_names();
// The comparison's CSV tables (written only when a baseline is given).
const std::vector<std::string>& compare_table_names();
bool is_table_name(const std::string& name);  // one of either list

}  // namespace txray::report
