// SQL and DB_CONNECT steps for PostgreSQL clients (libpq). The agent never links libpq: every libpq
// function it calls is resolved at run time (with the "libpq.so.5" fallback for dlopen'ed copies).
//
// One SQL row per query:
//   PQexec / PQexecParams / PQexecPrepared / PQprepare: the row spans the call;
//   PQsendQuery / PQsendQueryParams / PQsendQueryPrepared / PQsendPrepare: the row opens at the send and
//   closes when PQgetResult returns NULL (psql and pgbench work this way, PITFALLS 3);
//   a COPY's row lasts until the COPY is over (its final PQgetResult, or PQendcopy), so that the data
//   transfer is part of it.
// Per row: text and fingerprint (sql_normalizer.h; a prepared statement's text is the one given to
// PQprepare/PQsendPrepare, and PQprepare rows read "PREPARE name AS …"), attribute "params" (masked to
// their kinds by default), rows (sum of PQntuples over the query's results), changes (PQcmdTuples of
// INSERT/UPDATE/DELETE/MERGE/COPY), bytes read and written on the connection's socket meanwhile (the
// agent's per-descriptor counters; TCP connections only), and on failure status (PGRES_*), attribute
// "sqlstate" and error "ERROR <SQLSTATE>: <message>", which also marks the transaction failed.
// PQconnectdb / PQconnectdbParams / PQsetdbLogin are DB_CONNECT rows (text postgresql://user@host:port/db,
// attributes database, host, port, user; error when the connection failed, which marks the transaction
// failed); PQfinish is a MESSAGE row "PQfinish postgresql://…". libpq calls its own PQsendQuery and
// PQgetResult inside PQexec: the sql family guard keeps those from being rows of their own (PITFALLS 2).
// The guard is not held between a send and its results, and socket hooks (another family) count bytes.
#include <postgresql/libpq-fe.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/fd_table.h"
#include "core/recorder.h"
#include "protocols/sql/sql_config.h"
#include "protocols/sql/sql_statement.h"
#include "hooks/hook.h"

namespace {

using txray::HookFamily;
using txray::HookGuard;
using txray::SaveErrno;
using txray::StepKind;
using txray::StepRef;
using txray::Transaction;
namespace rec = txray::rec;
namespace sql = txray::sql;

constexpr const char* kLib = "libpq.so.5";

sql::HandleTable<sql::PgConnection>& connections() {
  static auto* t = new sql::HandleTable<sql::PgConnection>();  // never freed: hooks run during exit
  return *t;
}

// --- libpq functions the hooks call but do not intercept ---

const char* str_or(const char* s, const char* dflt) { return s && *s ? s : dflt; }

std::string conn_error(const PGconn* conn) {
  auto f = TXRAY_REAL(PQerrorMessage, kLib);
  std::string e = f && conn ? str_or(f(conn), "connection error") : "connection error";
  while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
  return e;
}

void socket_bytes(const PGconn* conn, uint64_t* read, uint64_t* written) {
  *read = *written = 0;
  auto f = TXRAY_REAL(PQsocket, kLib);
  if (!f || !conn) return;
  txray::FdSlot* slot = txray::fds::peek(f(conn));
  if (!slot || slot->kind.load(std::memory_order_relaxed) != txray::FdKind::outbound) return;
  *read = slot->bytes_read.load(std::memory_order_relaxed);
  *written = slot->bytes_written.load(std::memory_order_relaxed);
}

// "postgresql://user@host:port/db" of a connection (no password).
std::string conn_label(const PGconn* conn) {
  auto db = TXRAY_REAL(PQdb, kLib);
  auto host = TXRAY_REAL(PQhost, kLib);
  auto port = TXRAY_REAL(PQport, kLib);
  auto user = TXRAY_REAL(PQuser, kLib);
  if (!conn || !db || !host || !port || !user) return "postgresql://";
  return std::string("postgresql://") + str_or(user(conn), "") + "@" + str_or(host(conn), "") + ":" +
         str_or(port(conn), "") + "/" + str_or(db(conn), "");
}

sql::PgConnection& state_of(const PGconn* conn) {
  if (sql::PgConnection* c = connections().find(conn)) return *c;
  sql::PgConnection& c = connections().reset(conn);
  c.label = conn_label(conn);
  return c;
}

// --- one query ---

void begin_query(Transaction* tx, const PGconn* conn, sql::PgConnection& c, const sql::PgStatement& n,
                 const std::string& params) {
  sql::PendingQuery& q = c.pending;
  q = {};
  q.step = rec::open(tx, StepKind::SQL);
  q.active = true;
  rec::set_text(q.step, n.text);
  rec::set_fingerprint(q.step, n.fingerprint);
  if (!params.empty()) rec::add_attr(q.step, "params", params);
  socket_bytes(conn, &q.read0, &q.written0);
}

bool is_write_tag(const char* tag) {
  for (const char* w : {"INSERT", "UPDATE", "DELETE", "MERGE", "COPY"})
    if (std::strncmp(tag, w, std::strlen(w)) == 0) return true;
  return false;
}

// Folds one result of the query into it: rows, changes, error.
void add_result(Transaction* tx, const PGconn* conn, sql::PendingQuery& q, const PGresult* res) {
  if (!res) {
    if (!q.failed) {
      q.failed = true;
      std::string e = conn_error(conn);
      rec::set_error(q.step, e);
      if (tx == q.step.tx) rec::mark_failed(tx, e);
    }
    return;
  }
  auto status = TXRAY_REAL(PQresultStatus, kLib);
  auto ntuples = TXRAY_REAL(PQntuples, kLib);
  auto cmd_tuples = TXRAY_REAL(PQcmdTuples, kLib);
  auto cmd_status = TXRAY_REAL(PQcmdStatus, kLib);
  auto field = TXRAY_REAL(PQresultErrorField, kLib);
  if (!status || !ntuples || !cmd_tuples || !cmd_status || !field) return;
  ExecStatusType st = status(res);
  q.copying = st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH;
  if (st == PGRES_TUPLES_OK || st == PGRES_SINGLE_TUPLE) q.rows += ntuples(res);
  const char* tag = cmd_status(const_cast<PGresult*>(res));
  const char* n = cmd_tuples(const_cast<PGresult*>(res));
  if (tag && n && *n && is_write_tag(tag)) q.changes = (q.changes < 0 ? 0 : q.changes) + std::atoll(n);
  if ((st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE) && !q.failed) {
    q.failed = true;
    const char* code = str_or(field(res, PG_DIAG_SQLSTATE), "?????");
    const char* sev = str_or(field(res, PG_DIAG_SEVERITY_NONLOCALIZED), "ERROR");
    const char* msg = str_or(field(res, PG_DIAG_MESSAGE_PRIMARY), "");
    std::string e = std::string(sev) + " " + code + ": " + msg;
    rec::set_error(q.step, e);
    rec::set_status(q.step, int32_t(st));
    rec::add_attr(q.step, "sqlstate", code);
    if (tx == q.step.tx) rec::mark_failed(tx, e);
  }
}

// Closes the query's row and adds it to the SQL totals.
void end_query(Transaction* tx, const PGconn* conn, sql::PendingQuery& q) {
  if (!q.active) return;
  q.active = false;
  uint64_t r = 0, w = 0;
  socket_bytes(conn, &r, &w);
  rec::set_rows(q.step, q.rows);
  rec::set_changes(q.step, q.changes);
  if (r >= q.read0 && w >= q.written0) rec::add_bytes(q.step, r - q.read0, w - q.written0);
  // The elapsed the recorder measured and gave the row (or its summary line, when it was folded at
  // close): the SQL total is their exact sum.
  uint64_t el = rec::close(q.step);
  if (tx && tx == q.step.tx) rec::add_totals(tx, {.sql_ns = el, .sql_count = 1});
}

// What a query is: its normalized text (shared with its prepared statement, if any) and its parameters.
struct Query {
  sql::PgStatement n;
  std::string params;
};

sql::PgStatement normalized(std::string_view text) {
  const auto& cfg = sql::settings();
  sql::Normalized n = sql::normalize(text, cfg.mode, cfg.max_text);
  return {txray::SharedText(n.text), n.fingerprint};
}

Query plain(const char* text) { return {normalized(str_or(text, "")), {}}; }

Query with_params(const char* text, int n, const char* const* values, const int* lengths, const int* formats) {
  const auto& cfg = sql::settings();
  return {normalized(str_or(text, "")), sql::format_pg_params(n, values, lengths, formats, cfg.mode, cfg.max_bind)};
}

// PQprepare / PQsendPrepare: remembers the statement's text and describes the PREPARE itself.
Query prepare(sql::PgConnection& c, const char* name, const char* text) {
  std::string nm = name ? name : "";
  c.prepared[nm] = normalized(str_or(text, ""));
  std::string head = "PREPARE " + (nm.empty() ? std::string("\"\"") : nm) + " AS ";
  return {normalized(head + str_or(text, "")), {}};
}

Query prepared(sql::PgConnection& c, const char* name, int n, const char* const* values, const int* lengths,
               const int* formats) {
  const auto& cfg = sql::settings();
  Query q;
  auto it = c.prepared.find(name ? name : "");
  if (it != c.prepared.end()) q.n = it->second;  // shares the text: no copy per execution
  else q.n = normalized(std::string("EXECUTE ") + str_or(name, "\"\""));
  q.params = sql::format_pg_params(n, values, lengths, formats, cfg.mode, cfg.max_bind);
  return q;
}

// A synchronous call (PQexec…): one row around it. Outside a transaction only a PREPARE is looked at
// (its text is needed by later executions).
template <bool kPrepare = false, typename Describe, typename Call>
PGresult* sync_query(PGconn* conn, Describe describe, Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard || !conn) return call();
  Transaction* tx = rec::current();
  if (!tx && !kPrepare) return call();
  sql::PgConnection& c = state_of(conn);
  if (!tx) {
    describe(c);
    return call();
  }
  end_query(tx, conn, c.pending);  // results of an earlier send that were never read
  Query q = describe(c);
  begin_query(tx, conn, c, q.n, q.params);
  PGresult* res = call();
  SaveErrno keep;
  add_result(tx, conn, c.pending, res);
  // A COPY's data follows the call (PQputCopyData / PQgetCopyData): its row lasts until the COPY's
  // final result (PQgetResult) or PQendcopy.
  if (!c.pending.copying) end_query(tx, conn, c.pending);
  return res;
}

// An asynchronous send (PQsend…): the row stays open until PQgetResult returns NULL.
template <bool kPrepare = false, typename Describe, typename Call>
int send_query(PGconn* conn, Describe describe, Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard || !conn) return call();
  Transaction* tx = rec::current();
  if (!tx && !kPrepare) return call();
  sql::PgConnection& c = state_of(conn);
  if (!tx) {
    describe(c);
    return call();
  }
  end_query(tx, conn, c.pending);
  Query q = describe(c);
  begin_query(tx, conn, c, q.n, q.params);
  int ok = call();
  SaveErrno keep;
  if (!ok) {
    add_result(tx, conn, c.pending, nullptr);
    end_query(tx, conn, c.pending);
  }
  return ok;
}

template <typename Call>
PGconn* connect_hook(Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard) return call();
  Transaction* tx = rec::current();
  StepRef step = tx ? rec::open(tx, StepKind::DB_CONNECT) : StepRef{};
  PGconn* conn = call();
  SaveErrno keep;
  if (!conn) {
    if (tx) {
      rec::set_error(step, "out of memory");
      rec::mark_failed(tx, "PostgreSQL connection: out of memory");
      rec::close(step);
    }
    return conn;
  }
  sql::PgConnection& c = connections().reset(conn);
  c.label = conn_label(conn);
  if (!tx) return conn;
  rec::set_text(step, c.label);
  auto db = TXRAY_REAL(PQdb, kLib);
  auto host = TXRAY_REAL(PQhost, kLib);
  auto port = TXRAY_REAL(PQport, kLib);
  auto user = TXRAY_REAL(PQuser, kLib);
  if (db) rec::add_attr(step, "database", str_or(db(conn), ""));
  if (host) rec::add_attr(step, "host", str_or(host(conn), ""));
  if (port) rec::add_attr(step, "port", str_or(port(conn), ""));
  if (user) rec::add_attr(step, "user", str_or(user(conn), ""));
  auto status = TXRAY_REAL(PQstatus, kLib);
  if (status && status(conn) != CONNECTION_OK) {
    std::string e = conn_error(conn);
    rec::set_error(step, e);
    rec::mark_failed(tx, e);
  }
  rec::close(step);
  return conn;
}

}  // namespace

// --- connections ---------------------------------------------------------------------------------------

extern "C" PGconn* PQconnectdb(const char* conninfo) {
  auto real = TXRAY_REAL(PQconnectdb, kLib);
  if (!real) return nullptr;
  return connect_hook([&] { return real(conninfo); });
}

extern "C" PGconn* PQconnectdbParams(const char* const* keywords, const char* const* values, int expand_dbname) {
  auto real = TXRAY_REAL(PQconnectdbParams, kLib);
  if (!real) return nullptr;
  return connect_hook([&] { return real(keywords, values, expand_dbname); });
}

extern "C" PGconn* PQsetdbLogin(const char* host, const char* port, const char* options, const char* tty,
                                const char* db, const char* login, const char* pwd) {
  auto real = TXRAY_REAL(PQsetdbLogin, kLib);
  if (!real) return nullptr;
  return connect_hook([&] { return real(host, port, options, tty, db, login, pwd); });
}

extern "C" void PQfinish(PGconn* conn) {
  auto real = TXRAY_REAL(PQfinish, kLib);
  if (!real) return;
  std::unique_ptr<sql::PgConnection> c = conn ? connections().take(conn) : nullptr;
  HookGuard guard(HookFamily::sql);
  Transaction* tx = guard && conn ? rec::current() : nullptr;
  if (!tx) return real(conn);
  if (c) end_query(tx, conn, c->pending);
  StepRef step = rec::open(tx, StepKind::MESSAGE);
  rec::set_text(step, "PQfinish " + (c ? c->label : conn_label(conn)));
  real(conn);
  SaveErrno keep;
  rec::close(step);
}

// --- synchronous queries -------------------------------------------------------------------------------

extern "C" PGresult* PQexec(PGconn* conn, const char* query) {
  auto real = TXRAY_REAL(PQexec, kLib);
  if (!real) return nullptr;
  return sync_query(conn, [&](sql::PgConnection&) { return plain(query); }, [&] { return real(conn, query); });
}

extern "C" PGresult* PQexecParams(PGconn* conn, const char* command, int n, const Oid* types,
                                  const char* const* values, const int* lengths, const int* formats,
                                  int result_format) {
  auto real = TXRAY_REAL(PQexecParams, kLib);
  if (!real) return nullptr;
  return sync_query(
      conn, [&](sql::PgConnection&) { return with_params(command, n, values, lengths, formats); },
      [&] { return real(conn, command, n, types, values, lengths, formats, result_format); });
}

extern "C" PGresult* PQprepare(PGconn* conn, const char* name, const char* query, int n, const Oid* types) {
  auto real = TXRAY_REAL(PQprepare, kLib);
  if (!real) return nullptr;
  return sync_query<true>(
      conn, [&](sql::PgConnection& c) { return prepare(c, name, query); },
      [&] { return real(conn, name, query, n, types); });
}

extern "C" PGresult* PQexecPrepared(PGconn* conn, const char* name, int n, const char* const* values,
                                    const int* lengths, const int* formats, int result_format) {
  auto real = TXRAY_REAL(PQexecPrepared, kLib);
  if (!real) return nullptr;
  return sync_query(
      conn, [&](sql::PgConnection& c) { return prepared(c, name, n, values, lengths, formats); },
      [&] { return real(conn, name, n, values, lengths, formats, result_format); });
}

// --- asynchronous queries ------------------------------------------------------------------------------

extern "C" int PQsendQuery(PGconn* conn, const char* query) {
  auto real = TXRAY_REAL(PQsendQuery, kLib);
  if (!real) return 0;
  return send_query(conn, [&](sql::PgConnection&) { return plain(query); }, [&] { return real(conn, query); });
}

extern "C" int PQsendQueryParams(PGconn* conn, const char* command, int n, const Oid* types,
                                 const char* const* values, const int* lengths, const int* formats,
                                 int result_format) {
  auto real = TXRAY_REAL(PQsendQueryParams, kLib);
  if (!real) return 0;
  return send_query(
      conn, [&](sql::PgConnection&) { return with_params(command, n, values, lengths, formats); },
      [&] { return real(conn, command, n, types, values, lengths, formats, result_format); });
}

extern "C" int PQsendPrepare(PGconn* conn, const char* name, const char* query, int n, const Oid* types) {
  auto real = TXRAY_REAL(PQsendPrepare, kLib);
  if (!real) return 0;
  return send_query<true>(
      conn, [&](sql::PgConnection& c) { return prepare(c, name, query); },
      [&] { return real(conn, name, query, n, types); });
}

extern "C" int PQsendQueryPrepared(PGconn* conn, const char* name, int n, const char* const* values,
                                   const int* lengths, const int* formats, int result_format) {
  auto real = TXRAY_REAL(PQsendQueryPrepared, kLib);
  if (!real) return 0;
  return send_query(
      conn, [&](sql::PgConnection& c) { return prepared(c, name, n, values, lengths, formats); },
      [&] { return real(conn, name, n, values, lengths, formats, result_format); });
}

extern "C" PGresult* PQgetResult(PGconn* conn) {
  auto real = TXRAY_REAL(PQgetResult, kLib);
  if (!real) return nullptr;
  HookGuard guard(HookFamily::sql);
  if (!guard || !conn) return real(conn);
  sql::PgConnection* c = connections().find(conn);
  if (!c || !c->pending.active) return real(conn);
  PGresult* res = real(conn);
  SaveErrno keep;
  Transaction* tx = rec::current();
  if (res) add_result(tx, conn, c->pending, res);
  else end_query(tx, conn, c->pending);
  return res;
}

// The old COPY API: ends a COPY started by PQexec, reading its final result itself.
extern "C" int PQendcopy(PGconn* conn) {
  auto real = TXRAY_REAL(PQendcopy, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (!guard || !conn) return real(conn);
  sql::PgConnection* c = connections().find(conn);
  if (!c || !c->pending.active) return real(conn);
  int rc = real(conn);
  SaveErrno keep;
  Transaction* tx = rec::current();
  if (rc != 0 && !c->pending.failed) {
    c->pending.failed = true;
    std::string e = conn_error(conn);
    rec::set_error(c->pending.step, e);
    if (tx && tx == c->pending.step.tx) rec::mark_failed(tx, e);
  }
  end_query(tx, conn, c->pending);
  return rc;
}
