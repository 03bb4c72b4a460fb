// Writes generated transactions into a txray store (schema v1), fast: prepared statements, one SQLite
// transaction per ~50,000 rows. Used by txray-gen-store and by bench/viewer's live feed.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "gen_model.h"

namespace txray::gen {

class StoreWriter {
 public:
  enum class Mode {
    kBulk,    // a new store, nobody else reading: no journal while filling, indexes built at the end
    kAppend,  // a store others may read (WAL): each flush() is one ordinary transaction
  };
  // Opens (creating if needed) the store and its schema. Throws std::runtime_error on failure.
  StoreWriter(const std::string& path, const Catalog& catalog, Mode mode);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // transactions.id for the next transaction (max(id) + 1).
  int64_t next_id() const;
  // Queues rows; commits once about 50,000 rows are pending.
  void add(const TxRow& tx);
  void flush();
  // Commits, builds the indexes (bulk mode) and switches the store to WAL, as the collector leaves it.
  void close();

  int64_t rows_written() const { return rows_; }

 private:
  void exec(const char* sql);
  sqlite3_stmt* prepare(const char* sql);
  void step(sqlite3_stmt* st);

  sqlite3* db_ = nullptr;
  Mode mode_;
  sqlite3_stmt* ins_tx_ = nullptr;
  sqlite3_stmt* ins_step_ = nullptr;
  std::vector<int64_t> text_ids_;   // Catalog::texts index -> texts.id
  std::vector<int64_t> agent_ids_;  // Catalog::agents index -> agents.id
  bool in_tx_ = false;
  int64_t pending_ = 0, rows_ = 0;
};

}  // namespace txray::gen
