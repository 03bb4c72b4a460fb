// Turns txray transactions into OpenTelemetry spans (OTLP, the official opentelemetry-proto messages).
// Pure: no I/O, no clock; the exporter (exporter.h) and `txray export` (cmd_export.cpp) feed it. The
// mapping, attribute by attribute, is in docs/otlp.md.
//
//   transaction            -> a SERVER span (INTERNAL for process mode); span id = txid, parent = the
//                             caller's span id from traceparent, trace id = the wire's
//   SQL, HTTP_CALL, DNS,   -> a child span each (HTTP_CALL: span id = the id it sent in traceparent, so
//   SOCKET, DB_CONNECT        the callee's SERVER span is its child), nested as the rows nest
//   every other row        -> an event on the span it sits in (START, END, SOCKET_CLOSE, MESSAGE), and
//   (and summaries)           one event per summary line: with txray.row/gap/cpu the profile is rebuilt
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "txray/v1/txray.pb.h"

namespace txray::otlp {

namespace otpb = opentelemetry::proto;
using ExportRequest = otpb::collector::trace::v1::ExportTraceServiceRequest;

// The database a SQL row ran against. SQL rows carry no system name on the wire; a DB_CONNECT row does
// ("sqlite:<file>", "postgresql://user@host:port/db"), and some rows leave evidence only one library
// writes (SQLite: "binds", "SQLite error …"; libpq: "params", "sqlstate"). The builder remembers per agent
// instance what it has seen and names a SQL row's database from the last connection opened earlier in its
// transaction, else the only database (or kind of database) its process was seen to use, else the row's
// own evidence; else "other_sql" (a process whose first rows leave no evidence: docs/otlp.md).
class DbMemory {
 public:
  struct Db {
    std::string system;     // db.system.name: sqlite | postgresql
    std::string nspace;     // db.namespace: the SQLite file, the PostgreSQL database
    std::string host;       // server.address (PostgreSQL)
    int64_t port = 0;
  };
  // Notes a DB_CONNECT row (its text and "database"/"host"/"port" attributes) of an agent instance.
  void note(uint64_t instance, const v1::Step& connect);
  // Notes that a row of an agent instance showed it uses this system.
  void note_system(uint64_t instance, const std::string& system);
  // What is known of the database of a process that used one system only (its namespace when it
  // connected to one database only), else nullptr.
  const Db* only(uint64_t instance) const;

  static bool parse_connect(const v1::Step& connect, Db& out);

 private:
  static constexpr size_t kMaxInstances = 100000;
  void bound();
  struct Seen {
    Db db;
    bool several_systems = false;
    bool several_namespaces = false;
    bool connected = false;  // db came from a DB_CONNECT row (not only from a row's evidence)
  };
  std::unordered_map<uint64_t, Seen> seen_;
};

struct BuildCounts {
  uint64_t transactions = 0;
  uint64_t spans = 0;
  uint64_t events = 0;
};

// Appends one ResourceSpans (resource = the batch's agent) holding the spans of every transaction of the
// batch (unattributed containers are not transactions: their DB_CONNECT rows are only noted) to `req`.
BuildCounts add_batch(const v1::Batch& batch, ExportRequest& req, DbMemory& dbs);

// The span id of the i-th row of transaction `txid` when the row has none of its own: a fixed mix of the
// two, so that a live export and a later `txray export` of the same transaction give the same ids.
uint64_t derived_span_id(uint64_t txid, int row);

// 16 bytes; a transaction that arrived without a trace id gets one derived from its txid.
std::string trace_id_bytes(const v1::Transaction& tx);
std::string span_id_bytes(uint64_t id);

// First keyword of a statement, upper-cased: SELECT, INSERT, …; "" when none.
std::string sql_operation(const std::string& text);

}  // namespace txray::otlp
