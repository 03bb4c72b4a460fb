// The store's reader: selects transactions and loads them whole (agent, steps with their texts and
// callee links, summaries) as plain values. Used by `txray show`; available to the report and viewer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model.h"
#include "sqlite_handle.h"

namespace txray {

class Reader {
 public:
  // db may be read-only; it must outlive the reader.
  explicit Reader(const Db& db);

  // transactions.id of the selection; an empty app means every application. Unattributed containers
  // (model.h: kUnattributedKind) are not transactions and never selected, except by by_txid.
  std::vector<int64_t> last(int n, const std::string& app = {});      // most recent by end time, oldest first
  std::vector<int64_t> slowest(int n, const std::string& app = {});   // by response time, slowest first
  std::vector<int64_t> by_txid(uint64_t txid, const std::string& app = {});
  std::vector<int64_t> by_trace(const std::string& trace_hex, const std::string& app = {});  // by start time

  // Unattributed steps: their counts per agent and step kind (START and END rows left out, steps folded
  // past the step limit included), ordered by agent then kind; and the containers holding them, ordered
  // by agent then start time (load() reads one whole).
  std::vector<UnattributedCount> unattributed_counts(const std::string& app = {});
  std::vector<int64_t> unattributed_containers(const std::string& app = {});

  // Drop windows (when agents dropped transactions), ordered by first drop; empty for a store written
  // before the table existed.
  std::vector<DropWindowRow> drop_windows(const std::string& app = {});

  // The whole transaction; nullopt when no row has this id.
  std::optional<Transaction> load(int64_t id);
  std::optional<Agent> agent(int64_t agent_id);
  std::vector<Agent> agents();
  int64_t transaction_count();  // containers not included

  // The agent's own cost of transaction `id` (agent_cost_ns, agent_thread_ns); nullopt when none was
  // stored or the store predates the table. load() fills it in.
  std::optional<std::pair<int64_t, int64_t>> agent_cost(int64_t id);

 private:
  std::vector<int64_t> ids(const std::string& sql, const std::string& app, std::optional<int64_t> p1,
                           std::optional<std::string> ptext);

  // Prepared once, on first use (load() runs them for every transaction shown).
  Stmt& cached(std::unique_ptr<Stmt>& slot, const char* sql);
  // Whether the store has that table (optional tables: a store written by an older collector lacks them).
  bool has_table(const char* name);

  // CPU samples of t (cpu_rows, cpu_hot, cpu_stacks, cpu_tx, agent_cpu), when the store has the tables.
  void load_cpu(Transaction& t, int64_t agent_id);

  const Db& db_;
  std::unique_ptr<Stmt> tx_stmt_, steps_stmt_, summary_stmt_, agent_stmt_, cost_stmt_;
  std::optional<bool> has_cost_table_;
  std::unique_ptr<Stmt> cpu_tx_stmt_, cpu_rows_stmt_, cpu_hot_stmt_, cpu_stacks_stmt_, agent_cpu_stmt_;
  int has_cpu_ = -1;  // -1: not checked yet
  // The agent's CPU samples lost and stacks missed (agent_losses), when the store has the table.
  void load_losses(Transaction& t, int64_t agent_id);
  std::unique_ptr<Stmt> losses_stmt_;
  int has_losses_ = -1;  // -1: not checked yet
  // Stacks of the steps (step_frames), into steps (in `no` order).
  void load_stacks(int64_t tx_id, std::vector<Step>& steps);
  std::unique_ptr<Stmt> frames_stmt_;
  int has_frames_ = 0;  // step_frames exists: 0 not checked yet, 1 yes, -1 no (an older store)
};

}  // namespace txray
