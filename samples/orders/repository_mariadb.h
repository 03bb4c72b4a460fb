// The order database on MariaDB/MySQL (txray-orders --mariadb mysql://user@host:port/db): the same tables
// and rows as the SQLite file (dataset.h), loaded once with multi-row INSERTs, and a connection type with
// the service's two statements prepared server-side (mysql_stmt_prepare). With --no-pool every request
// pays a real connection: TCP connect, the handshake, authentication, a server thread.
#pragma once

#include <memory>
#include <string>

#include "model.h"

namespace txray::samples::orders {

// Creates and fills the two tables when they do not exist yet (under a named lock, so a concurrent
// starter waits and then finds them). Returns true when it loaded them. Throws on error.
bool ensure_mariadb_database(const std::string& url);

class MariaDbConnection {
 public:
  explicit MariaDbConnection(const std::string& url);  // connects and prepares; throws on error
  ~MariaDbConnection();
  MariaDbConnection(const MariaDbConnection&) = delete;
  MariaDbConnection& operator=(const MariaDbConnection&) = delete;
  Response run(const Request& req);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace txray::samples::orders
