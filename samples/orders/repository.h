// Reads the order database for the service. Two ways to get a connection:
// - pooled (default): each serving thread keeps one read-only connection and its prepared statements
//   for its whole life — what a connection pool gives a real service;
// - per request (--no-pool): open the database, prepare, query, close on every call — the classic
//   "no connection pooling" finding (jennifer case 1 in the reference material).
// The database is the SQLite file `path`, or PostgreSQL when `pg_conninfo` is set (repository_pg.h), or
// MariaDB when `mariadb_url` is set (repository_mariadb.h).
#pragma once

#include <string>

#include "model.h"

namespace txray::samples::orders {

class Repository {
 public:
  Repository(std::string path, bool pooled, std::string pg_conninfo = {}, std::string mariadb_url = {})
      : path_(std::move(path)), pg_(std::move(pg_conninfo)), mariadb_(std::move(mariadb_url)), pooled_(pooled) {}
  // Executes one request; never throws (database errors become Code::Error).
  Response execute(const Request& req) const;
  bool pooled() const { return pooled_; }

 private:
  std::string path_;
  std::string pg_;
  std::string mariadb_;
  bool pooled_;
};

}  // namespace txray::samples::orders
