// The store's writer: inserts decoded batches (txray.v1.Batch) with prepared statements. The caller
// groups many batches into one SQLite transaction (begin() … write() … commit()); a commit every few
// thousand rows is what makes ingest fast. Not thread-safe: one writer per connection, one thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "sqlite_handle.h"
#include "txray/v1/txray.pb.h"

namespace txray {

struct WriteCounts {
  uint64_t transactions = 0;
  uint64_t steps = 0;
  uint64_t summaries = 0;
  uint64_t links = 0;  // HTTP_CALL steps linked to their callee by this write
  uint64_t shed = 0;   // transactions counted in shed_counts (shed by the collector or sampled out by the agent)
};

class Writer {
 public:
  // db must have been opened with OpenMode::kCreate and outlive the writer.
  explicit Writer(Db& db);

  void begin();
  void commit();
  // Undoes the open transaction and forgets cached text ids (they may name rows that were rolled back).
  void rollback();
  bool in_transaction() const { return in_tx_; }

  // Inserts one batch: upserts its agent (with the latest cumulative drop counters) and its drop
  // windows, then its transactions, steps and summaries, and links outbound calls with their callees in either arrival
  // order. Expects a batch that ingest::validate_batch accepted. Must be called inside begin/commit.
  WriteCounts write(const v1::Batch& batch, int64_t received_unix_ns);

 private:
  int64_t upsert_agent(const v1::Batch& batch, int64_t now);
  void upsert_drop_window(const v1::DropWindow& w, int64_t agent_id, int64_t now);
  // Compares the batch's sent_transactions with what was received of its agent (agent_received); a
  // shortfall becomes a 'lost_in_flight' drop window. Then counts the batch's transactions as received.
  void account_received(const v1::Batch& b, int64_t agent_id, int64_t now);
  int64_t insert_transaction(const v1::Transaction& tx, int64_t agent_id, std::string_view app);
  void insert_step(int64_t tx_row, int no, const v1::Step& s, WriteCounts& counts);
  void insert_summary(int64_t tx_row, const v1::StepSummary& s);
  // Adds the batch's ShedCount entries to shed_counts; returns the transactions they count.
  uint64_t add_shed_counts(const v1::Batch& b, std::string_view app);
  // CPU samples (cpu_rows, cpu_hot, cpu_stacks, cpu_tx): nothing for a transaction without samples.
  void insert_cpu(int64_t tx_row, const v1::Transaction& tx);
  // Id of the texts row holding `text` (inserted when new); NULL-able: returns 0 for an empty text.
  int64_t text_id(std::string_view text);

  Db& db_;
  bool in_tx_ = false;
  Stmt begin_, commit_, rollback_;
  Stmt agent_upsert_;
  Stmt drop_window_upsert_;
  Stmt received_select_, received_upsert_, lost_seq_;
  Stmt tx_insert_;
  Stmt step_insert_;
  Stmt summary_insert_;
  Stmt shed_upsert_;
  Stmt text_insert_, text_select_;
  Stmt frame_insert_;    // step_frames: a step's stack
  Stmt link_callee_;     // a callee arrived: fill callee_tx_id of the waiting HTTP_CALL step
  Stmt cost_insert_;      // agent_cost: the agent's own cost of a transaction
  Stmt cost_units_insert_;  // agent_cost_units: once per agent instance
  Stmt find_callee_;     // an HTTP_CALL arrived: look for a callee stored before it
  Stmt agent_cpu_upsert_, agent_losses_upsert_, cpu_rows_insert_, cpu_hot_insert_, cpu_stacks_insert_, cpu_tx_insert_;
  // False while no stored transaction has a caller: then no HTTP_CALL can have a callee yet, and the
  // per-call lookup is skipped (the common case of a service that is nobody's callee).
  bool any_callee_ = false;
  std::unordered_map<uint64_t, int64_t> text_ids_;  // FNV-1a hash -> texts.id
  struct Received {
    int64_t transactions = 0;
    int64_t last_sent_unix_ns = 0;
  };
  std::unordered_map<int64_t, Received> received_;  // agents.id -> its agent_received row
  std::string json_buf_;
};

}  // namespace txray
