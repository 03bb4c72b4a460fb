// Two selections compared: the data behind the comparison panel. The computation is collector/report's
// (compare.h, the same as `txray report --baseline-*`): this file only runs it over the two selections'
// transaction ids and keeps the result with the text cells the report prints (report::compare_rows), so
// the panel shows exactly the report's figures.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "render.h"
#include "report_model.h"

namespace txray::viewer {

struct Comparison {
  std::string error;          // "" when computed
  report::Report report;      // summary = the current group; compare = the comparison
  report::CompareRows rows;   // the text cells of the report's comparison section
};
using ComparisonPtr = std::shared_ptr<const Comparison>;

// The two selections, as transactions.id values.
struct CompareRequest {
  std::vector<int64_t> baseline_ids, current_ids;
  int top = 30;  // member lines before "(n others)"
};
using CompareRequestPtr = std::shared_ptr<const CompareRequest>;

// Reads the store at `db` (read-only) on the calling thread: the loader's worker.
Comparison compare_selections(const std::string& db, const CompareRequest& req);

}  // namespace txray::viewer
