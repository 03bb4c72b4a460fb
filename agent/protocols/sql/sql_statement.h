// Per-handle state of the SQL hooks: what the agent keeps for each prepared SQLite statement, each libpq
// connection and each MySQL/MariaDB connection, result and prepared statement, looked up by the
// library's handle (sqlite3_stmt*, PGconn*, MYSQL*, MYSQL_RES*, MYSQL_STMT*).
//
// The normalized text (sql_normalizer.h) is computed once per prepared statement and reused by every
// execution; bind values are kept between executions as SQLite keeps them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/recorder.h"
#include "protocols/sql/sql_binds.h"
#include "protocols/sql/sql_normalizer.h"

namespace txray::sql {

// One execution of a statement whose first row has been returned and whose other rows are being
// fetched: its step was closed when the first row came (elapsed = time to the first row); the rows and
// fetch time are added to it when the execution ends (done, error, reset or finalize).
struct OpenExecution {
  bool active = false;
  StepRef step;
  uint64_t fingerprint = 0;
  int64_t rows = 0;
  uint64_t fetch_ns = 0;
};

struct SqliteStatement {
  Normalized sql;   // text per TXRAY_SQL, fingerprint
  SharedText text;  // sql.text, shared by every execution's row
  // Fixed for the statement's life, asked once at prepare (not per execution).
  void* db = nullptr;     // sqlite3_db_handle
  bool writes = false;    // !sqlite3_stmt_readonly: its row records the rows it changed
  BindList binds;
  OpenExecution run;
};

// A query sent on a libpq connection whose results are still being read (PQsend* … PQgetResult until
// it returns NULL), or a COPY in progress. Its step stays open for that time.
struct PendingQuery {
  bool active = false;
  StepRef step;
  int64_t rows = 0;
  int64_t changes = -1;
  bool failed = false;
  bool copying = false;  // the last result started a COPY: the row lasts until the COPY is over
  uint64_t read0 = 0, written0 = 0;  // socket byte counters when the query was sent
};

// A libpq prepared statement's normalized text, shared by the rows of its executions.
struct PgStatement {
  SharedText text;
  uint64_t fingerprint = 0;
};

struct PgConnection {
  std::string label;  // "db@host:port", for the PQfinish row
  std::unordered_map<std::string, PgStatement> prepared;  // statement name -> its text
  PendingQuery pending;
};

// A MySQL/MariaDB connection (MYSQL*).
struct MysqlConnection {
  std::string label;                // "mysql://user@host:port/db" (no password), for the mysql_close row
  PendingQuery pending;             // mysql_send_query … mysql_read_query_result
  SharedText pending_text;          // its normalized text and fingerprint, for its row at the answer
  uint64_t pending_fingerprint = 0;
  // The last query that returned a result set: its row is closed; mysql_store_result (or mysql_use_result
  // and the mysql_fetch_row calls that follow) add the rows and the fetch time to it.
  OpenExecution last;
};

// A result set read row by row (mysql_use_result … mysql_fetch_row until it returns NULL).
struct MysqlResult {
  void* conn = nullptr;  // MYSQL*: its error when a fetch fails
  OpenExecution run;
};

// Where a prepared statement's parameter lives (a copy of what mysql_stmt_bind_param was given: the
// library reads the buffers, lengths and null flags again at every mysql_stmt_execute, and so does the agent).
struct MysqlParamSlot {
  int type = 6;                      // enum_field_types (MYSQL_TYPE_NULL)
  const char* is_null = nullptr;     // my_bool*, or null: is_null_value
  bool is_null_value = false;
  bool is_unsigned = false;
  const void* buffer = nullptr;
  const unsigned long* length = nullptr;  // or null: buffer_length
  unsigned long buffer_length = 0;
};

struct MysqlStatement {
  void* conn = nullptr;  // MYSQL* it was made on (mysql_stmt_init), for its dialect
  Normalized sql;        // text per TXRAY_SQL, fingerprint
  SharedText text;
  std::vector<MysqlParamSlot> params;
  BindList binds;
  OpenExecution run;     // an execution whose result set is being read (store_result or fetch)
};

// Handle -> state, safe to use from several threads (a lock per shard; a handle itself is used by one
// thread at a time, as both libraries require). The state lives until erase(); the table is never
// destroyed (hooks can run during exit).
template <class V>
class HandleTable {
 public:
  // The hot path (bind, step, reset of the statement used last on this thread) hits a per-thread cache
  // of one entry, valid while no state was replaced or removed anywhere (generation count).
  V* find(const void* h) {
    LastHit& c = last_hit();
    uint64_t gen = generation_.load(std::memory_order_acquire);
    if (c.key == h && c.gen == gen && c.table == this) return c.value;
    V* v = nullptr;
    {
      Shard& s = shard(h);
      std::lock_guard<std::mutex> lock(s.mu);
      auto it = s.map.find(h);
      if (it != s.map.end()) v = it->second.get();
    }
    c = {this, h, v, gen};
    return v;
  }
  // A fresh state for `h` (a handle address can be reused after the library freed the old one).
  V& reset(const void* h) {
    Shard& s = shard(h);
    std::lock_guard<std::mutex> lock(s.mu);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    auto& p = s.map[h];
    p = std::make_unique<V>();
    return *p;
  }
  std::unique_ptr<V> take(const void* h) {
    Shard& s = shard(h);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(h);
    if (it == s.map.end()) return nullptr;
    generation_.fetch_add(1, std::memory_order_acq_rel);
    std::unique_ptr<V> v = std::move(it->second);
    s.map.erase(it);
    return v;
  }

 private:
  static constexpr unsigned kShards = 16;
  struct Shard {
    std::mutex mu;
    std::unordered_map<const void*, std::unique_ptr<V>> map;
  };
  struct LastHit {
    const HandleTable* table;
    const void* key;
    V* value;
    uint64_t gen;
  };
  static LastHit& last_hit() {
    static thread_local LastHit hit __attribute__((tls_model("initial-exec"))) = {nullptr, nullptr, nullptr, 0};
    return hit;
  }
  Shard& shard(const void* h) {
    auto x = reinterpret_cast<uintptr_t>(h);
    return shards_[((x >> 4) ^ (x >> 12)) % kShards];
  }
  Shard shards_[kShards];
  std::atomic<uint64_t> generation_{1};
};

}  // namespace txray::sql
