// The order database on PostgreSQL (txray-orders --pg CONNINFO): the same tables and rows as the SQLite
// file (dataset.h), loaded once with COPY, and a connection type with the service's two statements
// prepared server-side. With --no-pool every request pays a real connection: TCP or Unix-socket connect,
// the startup packet, authentication, a backend process forked by the server — the "no connection pool"
// finding of the reference case, where the difference is the connection steps.
#pragma once

#include <memory>
#include <string>

#include "model.h"

namespace txray::samples::orders {

// Creates and fills the two tables when they do not exist yet (in one transaction, so a concurrent
// starter waits on the lock and then finds them). Returns true when it loaded them. Throws on error.
bool ensure_pg_database(const std::string& conninfo);

class PgConnection {
 public:
  explicit PgConnection(const std::string& conninfo);  // connects and prepares; throws on error
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;
  Response run(const Request& req);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace txray::samples::orders
