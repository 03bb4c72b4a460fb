// `txray export`: stored transactions turned back into wire batches (txray.v1), so that a stored range
// goes through the same span builder as a live stream and gives the same spans (the same ids too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model.h"
#include "sqlite_handle.h"
#include "txray/v1/txray.pb.h"

namespace txray::otlp {

struct StoreSelection {
  std::optional<int64_t> since_ns;  // ending at or after (as `txray report --since`)
  std::optional<int64_t> until_ns;  // ending at or before
  std::string app;                  // "" = every application
};

// transactions.id of the selected transactions (containers left out), by start time.
std::vector<int64_t> select_transactions(const Db& db, const StoreSelection& sel);

// One batch per agent instance holding every DB_CONNECT row the store has of it (as an unattributed
// container): sent first, they tell the span builder which database each process's SQL rows ran against.
std::vector<v1::Batch> db_connect_batches(const Db& db, const StoreSelection& sel);

v1::AgentInfo to_wire(const Agent& a);
v1::Transaction to_wire(const Transaction& t);

}  // namespace txray::otlp
