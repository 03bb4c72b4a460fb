// Builds a txray store with known content for the report tests: the real schema.sql, then explicit
// inserts. Times are in milliseconds where the helpers say so (converted to ns).
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace txray::report::testing {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kBase = 1'764'410'400LL * 1'000'000'000;  // 2025-11-29T10:00:00Z

class StoreBuilder {
 public:
  StoreBuilder() {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("txray-report-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".db"))
                .string();
    std::filesystem::remove(path_);
    if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open");
    exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF");  // as the collector; fast
    std::ifstream f(TXRAY_SCHEMA_SQL);
    std::stringstream ss;
    ss << f.rdbuf();
    exec(ss.str());
    exec("BEGIN");
  }
  ~StoreBuilder() {
    if (db_) sqlite3_close(db_);
    // A read-only reader of a WAL store leaves -wal and -shm behind (it may not checkpoint).
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + suffix);
  }
  // Commits and returns the path (the builder keeps the file until it is destroyed).
  const std::string& done() {
    exec("COMMIT");
    sqlite3_close(db_);
    db_ = nullptr;
    return path_;
  }

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(m + " in: " + sql.substr(0, 200));
    }
  }
  static std::string q(const std::string& s) {  // SQL string literal
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }
  static std::string opt(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "NULL"; }

  int64_t agent(const std::string& app) {
    const int64_t id = ++agents_;
    exec("INSERT INTO agents(id, instance_id, app, program) VALUES (" + std::to_string(id) + ", " +
         std::to_string(1000 + id) + ", " + q(app) + ", " + q(app) + ")");
    return id;
  }

  int64_t text(const std::string& t) {
    const int64_t id = ++texts_;
    exec("INSERT INTO texts(id, hash, text) VALUES (" + std::to_string(id) + ", " + std::to_string(id * 7919) +
         ", " + q(t) + ")");
    return id;
  }

  struct Tx {
    int64_t agent = 1;
    std::string app = "shop", name = "GET /", kind = "http";
    int64_t start_ms = 0;  // from kBase
    int64_t elapsed_ms = 0, cpu_ms = 0, sql_ms = 0, fetch_ms = 0, call_ms = 0;
    int status = 200;
    std::optional<std::string> error;
  };
  int64_t tx(const Tx& t) {
    const int64_t id = ++txs_;
    const int64_t start = kBase + t.start_ms * kMs;
    exec("INSERT INTO transactions(id, txid, trace_id, agent_id, app, name, kind, start_unix_ns, end_unix_ns, "
         "elapsed_ns, cpu_ns, sql_ns, fetch_ns, call_ns, status, error) VALUES (" +
         std::to_string(id) + ", " + std::to_string(0x1000 + id) + ", " + q(std::string(32, 'a')) + ", " +
         std::to_string(t.agent) + ", " + q(t.app) + ", " + q(t.name) + ", " + q(t.kind) + ", " +
         std::to_string(start) + ", " + std::to_string(start + t.elapsed_ms * kMs) + ", " +
         std::to_string(t.elapsed_ms * kMs) + ", " + std::to_string(t.cpu_ms * kMs) + ", " +
         std::to_string(t.sql_ms * kMs) + ", " + std::to_string(t.fetch_ms * kMs) + ", " +
         std::to_string(t.call_ms * kMs) + ", " + std::to_string(t.status) + ", " +
         (t.error ? q(*t.error) : "NULL") + ")");
    return id;
  }

  struct Step {
    int no = 0, parent = -1;
    std::string kind = "MESSAGE";
    int64_t start_ms = 0, gap_ms = 0, cpu_ms = 0, elapsed_ms = 0;
    std::optional<std::string> text;
    std::optional<int64_t> fingerprint, rows, status, ref_id, fetch_ms;
    std::optional<std::string> error, attributes;
  };
  void step(int64_t tx_id, const Step& s) {
    const std::string text_id = s.text ? std::to_string(text(*s.text)) : "NULL";
    exec("INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns, text_id, error, "
         "ref_id, rows, fetch_ns, fingerprint, status, attributes) VALUES (" +
         std::to_string(tx_id) + ", " + std::to_string(s.no) + ", " + std::to_string(s.parent) + ", " + q(s.kind) +
         ", " + std::to_string(s.start_ms * kMs) + ", " + std::to_string(s.gap_ms * kMs) + ", " +
         std::to_string(s.cpu_ms * kMs) + ", " + std::to_string(s.elapsed_ms * kMs) + ", " + text_id + ", " +
         (s.error ? q(*s.error) : "NULL") + ", " + opt(s.ref_id) + ", " + opt(s.rows) + ", " +
         (s.fetch_ms ? std::to_string(*s.fetch_ms * kMs) : "NULL") + ", " + opt(s.fingerprint) + ", " +
         opt(s.status) + ", " + (s.attributes ? q(*s.attributes) : "NULL") + ")");
  }

  void summary(int64_t tx_id, const std::string& kind, std::optional<int64_t> fp, const std::string& t,
               int64_t count, int64_t elapsed_ms, std::optional<int64_t> rows, int64_t errors = 0) {
    exec("INSERT INTO step_summaries(tx_id, kind, fingerprint, text_id, count, elapsed_ns, rows, errors) VALUES (" +
         std::to_string(tx_id) + ", " + q(kind) + ", " + opt(fp) + ", " + std::to_string(text(t)) + ", " +
         std::to_string(count) + ", " + std::to_string(elapsed_ms * kMs) + ", " + opt(rows) + ", " +
         std::to_string(errors) + ")");
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  int64_t agents_ = 0, texts_ = 0, txs_ = 0;
};

}  // namespace txray::report::testing
