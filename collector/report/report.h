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
};

// Writes the report to out. Returns "" on success, else a one-line error (nothing useful written).
// format "csv" needs opt.table here (one table per stream); use write_report_dir for all tables.
std::string write_report(const Options& opt, std::ostream& out);

// CSV only: writes every table as <dir>/<table>.csv (creating dir). Returns "" or a one-line error.
std::string write_report_dir(const Options& opt, const std::string& dir);

// The CSV table names, in report order.
const std::vector<std::string>& table_names();

}  // namespace txray::report
