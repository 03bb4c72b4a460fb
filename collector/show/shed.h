// `txray show --shed`: the transactions counted but not stored (the shed_counts table): shed by the
// collector under load, or sampled out by the agents' head sampling. Per application, name, minute and
// origin: how many and their mean response time; or one JSON object per such row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sqlite_handle.h"

namespace txray::show {

struct ShedRow {
  std::string app, name, kind, origin;  // origin: collector | agent
  int64_t minute_unix_ns = 0;
  int64_t count = 0;
  int64_t elapsed_ns = 0;  // total response time
};

// Rows of shed_counts summed over buckets, oldest minute first; app empty: every application. A store
// without the table has none.
std::vector<ShedRow> load_shed_rows(const Db& db, const std::string& app = {});

// A header with the totals per origin, then one line per row:
// "  orders  GET /api  2026-11-30 15:40  collector  12,345  mean 0.412 ms"
std::string shed_text(const std::vector<ShedRow>& rows);

// One line for the end of other output: "shed: 12,345 transactions counted but not stored (txray show --shed)".
std::string shed_note(const std::vector<ShedRow>& rows);

nlohmann::ordered_json shed_row_json(const ShedRow& r);

}  // namespace txray::show
