// Reads the order database for the service. Two ways to get a connection:
// - pooled (default): each serving thread keeps one read-only connection and its prepared statements
//   for its whole life — what a connection pool gives a real service;
// - per request (--no-pool): open the database, prepare, query, close on every call — the classic
//   "no connection pooling" finding (jennifer case 1 in the reference material).
#pragma once

#include <string>

#include "model.h"

namespace txray::samples::orders {

class Repository {
 public:
  Repository(std::string path, bool pooled) : path_(std::move(path)), pooled_(pooled) {}
  // Executes one request; never throws (database errors become Code::Error).
  Response execute(const Request& req) const;
  bool pooled() const { return pooled_; }

 private:
  std::string path_;
  bool pooled_;
};

}  // namespace txray::samples::orders
