// Minimal RAII over sqlite3 for the report's read-only queries.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace txray::report {

struct SqlError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Db {
 public:
  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db() { if (db_) sqlite3_close(db_); }

  // Opens an existing store read-only; throws SqlError with a one-line message.
  void open_readonly(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      throw SqlError("cannot open store '" + path + "': " + msg);
    }
    sqlite3_busy_timeout(db_, 5000);  // the collector may be committing a batch right now
  }
  sqlite3* get() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt(const Db& db, std::string_view sql) : db_(db.get()) {
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &st_, nullptr) != SQLITE_OK)
      throw SqlError(std::string("query failed: ") + sqlite3_errmsg(db_));
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(st_); }

  void bind(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  sqlite3_stmt* raw() const { return st_; }
  void reset() { sqlite3_reset(st_); sqlite3_clear_bindings(st_); }

  // True while there is a row; throws on error.
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw SqlError(std::string("query failed: ") + sqlite3_errmsg(db_));
  }
  int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  bool null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::string_view text(int c) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(st_, c))) : std::string_view();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

}  // namespace txray::report
