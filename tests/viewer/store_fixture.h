// Test stores with known content: a schema-v1 file in a temporary directory and helpers that insert
// transactions and steps with explicit values (as the collector would).
#pragma once

#include <sqlite3.h>

#include <QTemporaryDir>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txray::test {

struct StepSpec {
  std::string kind;
  int parent = -1;
  int64_t start_offset_ns = 0, gap_ns = 0, cpu_ns = 0, elapsed_ns = 0;
  std::string text;
  std::optional<int64_t> callee_tx_id, ref_id;
  int64_t bytes_read = 0, bytes_written = 0;
  std::string attributes;
};

struct TxSpec {
  int64_t id = 0;
  std::string app = "shop", name = "GET /x";
  int64_t end_ns = 0, elapsed_ns = 1000000, cpu_ns = 0;
  int status = 200;
  std::string error;
  std::string trace_id;
  int64_t parent_span_id = 0;
  std::vector<StepSpec> steps;  // empty: START and END only
  std::string kind = "http";    // "unattributed": a container of unattributed steps, not a transaction
};

// An unattributed container (docs/schema.md) of the fixture's agent: START, `steps`, END, ending at end_ns.
TxSpec unattributed_container(int64_t id, int64_t end_ns, std::vector<StepSpec> steps);

constexpr int64_t kMs = 1000000;

// The reference case (docs of X-View): a call whose 51,612-byte response is read in ~1.5 s, then 1,464 ms
// of gap with 1,356 ms of CPU before the END. Response 2,942 ms. callee: the called transaction's id.
TxSpec reference_tx(int64_t id, int64_t end_ns, int64_t callee);

class StoreFixture {
 public:
  StoreFixture();  // creates <tmp>/store.db with the schema, WAL mode, one agent
  ~StoreFixture();
  std::string path() const { return path_; }
  void insert(const TxSpec& tx);            // one transaction and its steps, in one SQLite transaction
  void insert(const std::vector<TxSpec>& txs);
  void exec(const std::string& sql);
  sqlite3* db() const { return db_; }

 private:
  QTemporaryDir dir_;
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace txray::test
