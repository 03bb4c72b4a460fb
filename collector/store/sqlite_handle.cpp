#include "sqlite_handle.h"

namespace txray {

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    if (h_) sqlite3_close_v2(h_);
    h_ = o.h_;
    o.h_ = nullptr;
  }
  return *this;
}

Db::~Db() {
  if (h_) sqlite3_close_v2(h_);
}

void Db::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(h_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(h_);
    sqlite3_free(err);
    throw StoreError("sqlite: " + msg);
  }
}

std::string Db::path() const {
  const char* p = h_ ? sqlite3_db_filename(h_, "main") : nullptr;
  return p ? p : "";
}

Stmt::Stmt(const Db& db, std::string_view sql) : db_(db.get()) {
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &s_,
                         nullptr) != SQLITE_OK) {
    throw StoreError("sqlite: " + std::string(sqlite3_errmsg(db_)) + " in: " + std::string(sql));
  }
}

Stmt::~Stmt() {
  if (s_) sqlite3_finalize(s_);
}

Stmt& Stmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Stmt& Stmt::bind_static(int i, std::string_view v) {
  sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
  return *this;
}

Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  std::string msg = sqlite3_errmsg(db_);
  const char* sql = sqlite3_sql(s_);
  sqlite3_reset(s_);
  throw StoreError("sqlite: " + msg + (sql ? std::string(" in: ") + sql : std::string()));
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

void Stmt::run() {
  step();
  reset();
}

std::string Stmt::text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  if (!t) return {};
  return std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, col)));
}

}  // namespace txray
