// The transactions a report covers, loaded once from the store in one pass (one row each, sorted by
// transactions.id). Everything else of the report is computed from this and from their steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report.h"
#include "sqlite_util.h"

namespace txray::report {

struct TxRec {
  int64_t id;
  int64_t start, end, elapsed, cpu, sql, fetch, call;
  int32_t group;  // index into Selection::groups (app, name)
  bool error;     // error text present, or an http transaction with status >= 500
};

struct Selection {
  std::vector<TxRec> txs;  // ascending id
  struct Group {
    std::string app, name;
  };
  std::vector<Group> groups;
  std::string filters;  // human-readable description of the filters

  const TxRec* find(int64_t id) const;
};

// Throws SqlError (or std::runtime_error) with a one-line message.
void check_store(const Db& db);
Selection select_transactions(const Db& db, const Options& opt);

}  // namespace txray::report
