#include "repository.h"

#include "repository_pg.h"

#include <sqlite3.h>

#include <memory>
#include <stdexcept>

namespace txray::samples::orders {

namespace {

constexpr const char* kStatusSql = "SELECT status FROM orders WHERE id = ?";
constexpr const char* kCustomersSql =
    "SELECT id, name, company, email, phone, address, city, country, balance_cents FROM customers "
    "WHERE id > ? ORDER BY id LIMIT ?";

// One open connection with its two statements.
class Connection {
 public:
  explicit Connection(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw std::runtime_error("cannot open " + path + ": " + msg);
    }
    prepare(kStatusSql, &status_);
    prepare(kCustomersSql, &customers_);
  }
  ~Connection() {
    sqlite3_finalize(status_);
    sqlite3_finalize(customers_);
    sqlite3_close(db_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Response run(const Request& req) {
    Response r;
    if (req.method == Method::GetOrderStatus) {
      sqlite3_bind_int64(status_, 1, req.order_id);
      int rc = sqlite3_step(status_);
      if (rc == SQLITE_ROW) {
        r.status = sqlite3_column_int(status_, 0);
      } else if (rc == SQLITE_DONE) {
        r.code = Code::NotFound;
        r.error = "no order " + std::to_string(req.order_id);
      } else {
        r.code = Code::Error;
        r.error = sqlite3_errmsg(db_);
      }
      sqlite3_reset(status_);
      return r;
    }
    sqlite3_bind_int64(customers_, 1, req.customer_id);
    sqlite3_bind_int(customers_, 2, static_cast<int>(req.n));
    int rc;
    while ((rc = sqlite3_step(customers_)) == SQLITE_ROW) {
      Customer c;
      c.id = sqlite3_column_int64(customers_, 0);
      std::string* texts[] = {&c.name, &c.company, &c.email, &c.phone, &c.address, &c.city, &c.country};
      for (int k = 0; k < 7; ++k) {
        auto p = sqlite3_column_text(customers_, 1 + k);
        texts[k]->assign(p ? reinterpret_cast<const char*>(p) : "");
      }
      c.balance_cents = sqlite3_column_int64(customers_, 8);
      r.customers.push_back(std::move(c));
    }
    if (rc != SQLITE_DONE) {
      r = Response{};
      r.code = Code::Error;
      r.error = sqlite3_errmsg(db_);
    }
    sqlite3_reset(customers_);
    return r;
  }

 private:
  void prepare(const char* sql, sqlite3_stmt** st) {
    if (sqlite3_prepare_v2(db_, sql, -1, st, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("prepare: ") + sqlite3_errmsg(db_));
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt* status_ = nullptr;
  sqlite3_stmt* customers_ = nullptr;
};

}  // namespace

Response Repository::execute(const Request& req) const {
  if (req.method == Method::GetCustomers && (req.n == 0 || req.n > kMaxPage)) {
    Response r;
    r.code = Code::BadRequest;
    r.error = "n must be 1.." + std::to_string(kMaxPage);
    return r;
  }
  try {
    if (!pg_.empty()) {
      if (!pooled_) {
        PgConnection fresh(pg_);
        return fresh.run(req);
      }
      thread_local std::unique_ptr<PgConnection> pg_conn;
      if (!pg_conn) pg_conn = std::make_unique<PgConnection>(pg_);
      return pg_conn->run(req);
    }
    if (!pooled_) {
      Connection fresh(path_);
      return fresh.run(req);
    }
    // The pool: one connection per serving thread, kept for the thread's life.
    thread_local std::unique_ptr<Connection> conn;
    if (!conn) conn = std::make_unique<Connection>(path_);
    return conn->run(req);
  } catch (const std::exception& e) {
    Response r;
    r.code = Code::Error;
    r.error = e.what();
    return r;
  }
}

}  // namespace txray::samples::orders
