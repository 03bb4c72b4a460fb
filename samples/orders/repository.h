// Reads the order database for the service. Two ways to get a connection:
// - pooled (default): each serving thread keeps one read-only connection and its prepared statements
//   for its whole life — what a connection pool gives a real service;
// - per request (--no-pool): open the database, prepare, query, close on every call — the classic
//   "no connection pooling" finding (jennifer case 1 in the reference material).
// The database is the SQLite file `path`, or PostgreSQL when `pg_conninfo` is set (repository_pg.h).
#pragma once

#include <string>

#include "model.h"

namespace txray::samples::orders {

class Repository {
 public:
  Repository(std::string path, bool pooled, std::string pg_conninfo = {})
      : path_(std::move(path)), pg_(std::move(pg_conninfo)), pooled_(pooled) {}
  // Executes one request; never throws (database errors become Code::Error).
  Response execute(const Request& req) const;
  bool pooled() const { return pooled_; }

 private:
  std::string path_;
  std::string pg_;
  bool pooled_;
};

}  // namespace txray::samples::orders
