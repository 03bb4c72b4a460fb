// Thin RAII wrappers over the SQLite C API, used by the store's writer and reader. Errors throw
// StoreError with SQLite's message and the statement that failed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace txray {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Db {
 public:
  Db() = default;
  explicit Db(sqlite3* h) : h_(h) {}
  Db(Db&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  sqlite3* get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  // Runs one or more statements that return no rows.
  void exec(const char* sql);
  std::string path() const;

 private:
  sqlite3* h_ = nullptr;
};

// A prepared statement. bind_*() take 1-based indexes like SQLite; step() returns true while a row is
// available and throws on error; reset() makes it reusable with new bindings.
class Stmt {
 public:
  Stmt(const Db& db, std::string_view sql);
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, uint64_t v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, uint32_t v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, std::string_view v);  // the text is copied (SQLITE_TRANSIENT)
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  // The caller keeps v alive until the statement is reset (no copy: the writer's hot path).
  Stmt& bind_static(int i, std::string_view v);
  Stmt& bind_null(int i);
  template <typename T>
  Stmt& bind_opt(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }
  // Empty text binds NULL.
  Stmt& bind_text_or_null(int i, std::string_view v) { return v.empty() ? bind_null(i) : bind(i, v); }

  bool step();
  void reset();  // also clears the bindings
  // Steps a statement that returns no rows, then resets it.
  void run();

  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  std::string text(int col) const;
  std::optional<int64_t> opt_i64(int col) const {
    return is_null(col) ? std::nullopt : std::optional<int64_t>(i64(col));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace txray
