#include "comparison.h"

#include "compute.h"

namespace txray::viewer {

Comparison compare_selections(const std::string& db, const CompareRequest& req) {
  Comparison c;
  report::Options opt;
  opt.db = db;
  opt.top = req.top;
  opt.tx_ids = req.current_ids;
  opt.baseline = report::Options::Baseline{};
  opt.baseline->tx_ids = req.baseline_ids;
  opt.compare_only = true;
  if (req.current_ids.empty() || req.baseline_ids.empty()) {
    c.error = "both selections need at least one transaction";
    return c;
  }
  c.error = report::compute_report(opt, c.report);
  if (c.error.empty()) c.rows = report::compare_rows(c.report);
  return c;
}

}  // namespace txray::viewer
