// Read-only access to a txray store (collector/store/schema.sql), with plain sqlite3: the scatter loads
// a million rows at open, and sqlite3's column accessors cost a fraction of QtSql's QVariant per value.
// The connection is opened read-only, so a collector can keep writing to the store in WAL mode.
//
// A Store belongs to one thread (the Loader's worker thread in the viewer).
#pragma once

#include <cstdint>
#include <climits>
#include <string>
#include <string_view>
#include <unordered_map>

#include "types.h"

struct sqlite3;
struct sqlite3_stmt;

namespace txray::viewer {

class Store {
 public:
  // Throws std::runtime_error with a readable message when the file is missing or not a txray store.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The transactions among the next `limit` rows with after_id < id <= until_id, in id order, and the
  // unattributed steps of the containers among those rows (types.h: PointBatch).
  PointBatch load_points(int64_t after_id, int64_t limit, int64_t until_id = INT64_MAX);
  // Index of an application / a name in this Store's dictionaries (added when new); used to merge the
  // points another Store (another thread) read into this one's numbering.
  int app_index(const std::string& app);
  int name_index(const std::string& name);
  const std::vector<std::string>& apps() const { return apps_; }
  const std::vector<std::string>& names() const { return names_; }
  // Largest transactions.id (0 when empty): O(log n), unlike COUNT(*), which reads the whole table.
  int64_t max_id();
  // The transactions inside `box` whose id lies in [min_id, max_id] (the caller knows that range from its
  // points; it lets SQLite walk the table by id instead of the end-time index).
  std::vector<TxSummary> query_box(const Box& box, int64_t min_id, int64_t max_id);
  // The profile of transaction `id`; nullopt when there is no such transaction.
  std::optional<Profile> load_profile(int64_t id);
  // The store id of the transaction whose agent txid is `txid` (what `txray show` prints, a metrics
  // exemplar's label); the latest when an agent reused one; nullopt when there is none.
  std::optional<int64_t> find_txid(uint64_t txid);
  int64_t count();  // transactions (containers of unattributed steps not included)
  // Transactions counted but not stored (shed_counts, docs/schema.md); 0 for a store without the table.
  int64_t shed_count();

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Dict = std::unordered_map<std::string, int, Hash, std::equal_to<>>;
  int intern(Dict& dict, std::vector<std::string>& list, const unsigned char* text, int len, int max);
  sqlite3_stmt* prepare(const char* sql);
  void load_agent_cost(Profile& p);
  // Adds the unattributed steps of container `id` (START and END rows left out, folded steps included).
  void count_unattributed(int64_t id, KindCounts& out);
  // The CPU samples of p (rows' hot functions, stacks), when the store has the cpu_* tables.
  void load_cpu(Profile& p);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* count_unattributed_ = nullptr;  // prepared on first use (a store may hold many containers)
  int has_cpu_ = -1;  // -1: not checked yet
  std::string path_;
  Dict app_index_, name_index_;
  std::vector<std::string> apps_, names_;
};

}  // namespace txray::viewer
