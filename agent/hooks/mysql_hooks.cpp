// SQL and DB_CONNECT steps for MySQL/MariaDB clients (libmariadb: Debian's libmariadb3, which Python's
// MySQLdb links too; the "libmariadb.so.3" fallback finds it when Python dlopen'ed it in local scope,
// PITFALLS 1). The agent never links libmariadb: every function it calls is resolved at run time, and a
// program without the library never reaches these hooks.
//
// One SQL row per query:
//   mysql_real_query / mysql_query: the row spans the call (send + the server's answer);
//   mysql_send_query … mysql_read_query_result: the row opens at the send, closes when the answer is read;
//   mysql_stmt_prepare: a row "PREPARE <text>" (a round trip to the server); a failed prepare is a failed row;
//   mysql_stmt_execute: a row with the prepared text and attribute "binds" (mysql_stmt_bind_param's
//   parameters, read at each execute as the library reads them; masked to their kinds by default).
// A query that returns a result set has rows = 0 when its row closes; the rows and the fetch time are added
// when they are read: mysql_store_result / mysql_stmt_store_result (all of them, rows = num_rows), or
// mysql_use_result + mysql_fetch_row / mysql_stmt_fetch (one by one, until the end, mysql_free_result,
// mysql_stmt_free_result/reset/close or the next execute). Other statements: changes = affected rows.
// Failures: status = the server's error number, attribute "sqlstate", error "ERROR 1146 (42S02): …" (as the
// mysql client prints it), which also marks the transaction failed.
// Text and fingerprint come from sql_normalizer.h with the MySQL dialect ('\' escapes, ".." strings, '#'
// comments; without '\' escapes when the server says sql_mode has NO_BACKSLASH_ESCAPES).
// mysql_real_connect is a DB_CONNECT row (text mysql://user@host:port/db, attributes database, host, port,
// user, socket, db.system = mariadb | mysql, server_version; on failure the error, which marks the
// transaction failed); mysql_close is a MESSAGE row "mysql_close mysql://…".
// libmariadb calls its own public functions through the PLT (mysql_query -> mysql_real_query,
// mysql_real_connect -> queries of its init commands, mysql_stmt_store_result -> …): the sql family guard
// keeps those from being rows (PITFALLS 2). mysql_commit / mysql_rollback / mysql_autocommit are not hooked:
// their inner mysql_real_query ("COMMIT", …) is the row.
// Not covered: the non-blocking API (*_start / *_cont), multi-statement results after the first
// (mysql_next_result), MariaDB's array binds (STMT_ATTR_ARRAY_SIZE: binds show the first row's kinds).
#include <mariadb/mysql.h>

#include <cstdio>
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

constexpr const char* kLib = "libmariadb.so.3";

// Never freed: hooks run during exit.
sql::HandleTable<sql::MysqlConnection>& connections() {
  static auto* t = new sql::HandleTable<sql::MysqlConnection>();
  return *t;
}
sql::HandleTable<sql::MysqlResult>& results() {
  static auto* t = new sql::HandleTable<sql::MysqlResult>();
  return *t;
}
sql::HandleTable<sql::MysqlStatement>& statements() {
  static auto* t = new sql::HandleTable<sql::MysqlStatement>();
  return *t;
}

const char* str_or(const char* s, const char* dflt) { return s && *s ? s : dflt; }

// --- libmariadb functions the hooks call but do not intercept ---

// '\' escapes in strings unless the server runs with NO_BACKSLASH_ESCAPES (every OK packet says which).
sql::Dialect dialect_of(MYSQL* m) {
  auto info = TXRAY_REAL(mariadb_get_infov, kLib);
  unsigned int status = 0;
  if (m && info && info(m, MARIADB_CONNECTION_SERVER_STATUS, &status) == 0 &&
      (status & SERVER_STATUS_NO_BACKSLASH_ESCAPES))
    return sql::Dialect::mysql_no_backslash;
  return sql::Dialect::mysql;
}

// "ERROR 1146 (42S02): Table ? doesn't exist", as the mysql client prints it, the quoted part masked
// (the server quotes values and statement text in its messages: sql_normalizer.h).
std::string error_text(unsigned int code, const char* state, const char* msg) {
  char head[48];
  std::snprintf(head, sizeof head, "ERROR %u (%s): ", code, str_or(state, "HY000"));
  return std::string(head) + sql::mask_error_message(str_or(msg, "unknown error"), sql::settings().mode);
}

void fail(Transaction* tx, const StepRef& step, unsigned int code, const char* state, const char* msg) {
  std::string e = error_text(code, state, msg);
  rec::set_error(step, e);
  rec::set_status(step, int32_t(code));
  rec::add_attr(step, "sqlstate", str_or(state, "HY000"));
  if (tx && tx == step.tx) rec::mark_failed(tx, e);
}

void fail_conn(Transaction* tx, const StepRef& step, MYSQL* m) {
  if (!m) return fail(tx, step, 2000, "HY000", "no connection handle");
  auto no = TXRAY_REAL(mysql_errno, kLib);
  auto state = TXRAY_REAL(mysql_sqlstate, kLib);
  auto msg = TXRAY_REAL(mysql_error, kLib);
  fail(tx, step, no ? no(m) : 0, state ? state(m) : nullptr, msg ? msg(m) : nullptr);
}

void fail_stmt(Transaction* tx, const StepRef& step, MYSQL_STMT* st) {
  auto no = TXRAY_REAL(mysql_stmt_errno, kLib);
  auto state = TXRAY_REAL(mysql_stmt_sqlstate, kLib);
  auto msg = TXRAY_REAL(mysql_stmt_error, kLib);
  fail(tx, step, no ? no(st) : 0, state ? state(st) : nullptr, msg ? msg(st) : nullptr);
}

unsigned int conn_errno(MYSQL* m) {
  auto f = TXRAY_REAL(mysql_errno, kLib);
  return f && m ? f(m) : 0;
}

void socket_bytes(MYSQL* m, uint64_t* read, uint64_t* written) {
  *read = *written = 0;
  auto f = TXRAY_REAL(mysql_get_socket, kLib);
  if (!f || !m) return;
  txray::FdSlot* slot = txray::fds::peek(int(f(m)));
  if (!slot || slot->kind.load(std::memory_order_relaxed) != txray::FdKind::outbound) return;
  *read = slot->bytes_read.load(std::memory_order_relaxed);
  *written = slot->bytes_written.load(std::memory_order_relaxed);
}

// The connection a statement was made on, while it is open (mysql_close forgets it; the statement may
// outlive it, and the MYSQL it points to is freed then).
MYSQL* live_conn(void* c) { return c && connections().find(c) ? static_cast<MYSQL*>(c) : nullptr; }

sql::MysqlConnection& state_of(MYSQL* m) {
  if (sql::MysqlConnection* c = connections().find(m)) return *c;
  sql::MysqlConnection& c = connections().reset(m);
  c.label = "mysql://";
  return c;
}

// --- one query on a connection ---

struct Described {
  sql::Normalized n;
  txray::SharedText text;
};

Described describe(MYSQL* m, const char* q, unsigned long len) {
  const auto& cfg = sql::settings();
  std::string_view sv = q ? std::string_view(q, len) : std::string_view();
  Described d{sql::normalize(sv, cfg.mode, cfg.max_text, dialect_of(m)), {}};
  d.text = txray::SharedText(d.n.text);
  return d;
}

// What the server answered to a query whose row is `step` (the call just returned `failed`): error, or
// changes, or a result set to be read (its rows and fetch time added later). Closes the row.
void finish_query(Transaction* tx, MYSQL* m, sql::MysqlConnection& c, StepRef& step, const txray::SharedText& text,
                  uint64_t fingerprint, bool failed, uint64_t read0, uint64_t written0) {
  rec::SqlRow row{.text = &text, .fingerprint = fingerprint};
  if (failed) {
    fail_conn(tx, step, m);
  } else {
    auto fields = TXRAY_REAL(mysql_field_count, kLib);
    auto affected = TXRAY_REAL(mysql_affected_rows, kLib);
    if (fields && fields(m) > 0) {
      row.rows = 0;
      c.last = {.active = true, .step = step, .fingerprint = fingerprint, .rows = 0, .fetch_ns = 0};
    } else if (affected) {
      my_ulonglong n = affected(m);
      if (n != my_ulonglong(-1)) row.changes = int64_t(n);
    }
  }
  uint64_t r = 0, w = 0;
  socket_bytes(m, &r, &w);
  if (r >= read0 && w >= written0 && (r > read0 || w > written0)) rec::add_bytes(step, r - read0, w - written0);
  rec::close_sql(step, row);
}

// A query outside any transaction: the result set of an earlier query (whose rows were never read) must
// not collect this one's rows.
void forget_result(MYSQL* m) {
  if (sql::MysqlConnection* c = connections().find(m)) c->last.active = false;
}

// rows and fetch time read after the row closed.
void end_run(sql::OpenExecution& run) {
  if (!run.active) return;
  run.active = false;
  rec::end_fetch(run.step, run.fingerprint, run.rows, run.fetch_ns);
}

template <typename Call>
int query_hook(MYSQL* m, const char* q, unsigned long len, Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard || !m) return call();
  Transaction* tx = rec::current();
  if (!tx) {
    forget_result(m);
    return call();
  }
  sql::MysqlConnection& c = state_of(m);
  c.last.active = false;  // an unread result set is gone with the next query
  Described d = describe(m, q, len);
  uint64_t r0 = 0, w0 = 0;
  socket_bytes(m, &r0, &w0);
  StepRef step = rec::open(tx, StepKind::SQL);
  int rc = call();
  SaveErrno keep;
  finish_query(tx, m, c, step, d.text, d.n.fingerprint, rc != 0, r0, w0);
  return rc;
}

// A result set: all of it now (store) or row by row later (use).
template <bool kStore, typename Call>
MYSQL_RES* result_hook(MYSQL* m, Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard || !m) return call();
  sql::MysqlConnection* c = connections().find(m);
  if (!c || !c->last.active) return call();
  sql::OpenExecution run = c->last;
  c->last.active = false;
  uint64_t t0 = rec::now_ns();
  MYSQL_RES* res = call();
  SaveErrno keep;
  run.fetch_ns = rec::now_ns() - t0;
  if (!res && conn_errno(m) != 0) {
    Transaction* tx = rec::current();
    if (tx && tx == run.step.tx) fail_conn(tx, run.step, m);
  }
  if (kStore || !res) {
    auto num = TXRAY_REAL(mysql_num_rows, kLib);
    if (res && num) run.rows = int64_t(num(res));
    end_run(run);
    return res;
  }
  sql::MysqlResult& r = results().reset(res);
  r.conn = m;
  r.run = run;
  return res;
}

template <typename Call>
MYSQL* connect_hook(MYSQL* m, const char* host, const char* user, const char* db, unsigned int port,
                    const char* unix_socket, Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard) return call();
  Transaction* tx = rec::current();
  StepRef step = tx ? rec::open(tx, StepKind::DB_CONNECT) : StepRef{};
  MYSQL* out = call();
  SaveErrno keep;
  bool tcp = !(unix_socket && *unix_socket) && host && *host && std::strcmp(host, "localhost") != 0;
  std::string h = tcp ? host : std::string("localhost");
  std::string p = tcp ? std::to_string(port ? port : 3306u) : std::string(str_or(unix_socket, "(default socket)"));
  std::string label = std::string("mysql://") + str_or(user, "") + "@" + h + ":" + p + "/" + str_or(db, "");
  if (out) connections().reset(out).label = label;
  if (!tx) return out;
  rec::set_text(step, label);
  rec::add_attr(step, "database", str_or(db, ""));
  rec::add_attr(step, "host", h);
  rec::add_attr(step, tcp ? "port" : "socket", p);
  rec::add_attr(step, "user", str_or(user, ""));
  if (out) {
    auto info = TXRAY_REAL(mysql_get_server_info, kLib);
    const char* version = info ? info(out) : nullptr;
    rec::add_attr(step, "db.system", version && std::strstr(version, "MariaDB") ? "mariadb" : "mysql");
    if (version) rec::add_attr(step, "server_version", version);
  } else {
    rec::add_attr(step, "db.system", "mysql");
    fail_conn(tx, step, m);
  }
  rec::close(step);
  return out;
}

// --- prepared statements ---

sql::MysqlStatement* stmt_state(MYSQL_STMT* st, bool create) {
  if (!st) return nullptr;
  sql::MysqlStatement* s = statements().find(st);
  if (s || !create) return s;
  return &statements().reset(st);
}

// The parameters as they are now (the program may have changed values, lengths and null flags since it
// bound them): into the statement's bind list, which rebuilds its text only when something shown changed.
void read_params(sql::MysqlStatement& s) {
  const auto& cfg = sql::settings();
  if (cfg.mode == sql::TextMode::off) return;
  int i = 0;
  for (const sql::MysqlParamSlot& slot : s.params) {
    ++i;
    sql::MysqlParam p{.type = slot.type,
                      .is_null = slot.is_null ? *slot.is_null != 0 : slot.is_null_value,
                      .is_unsigned = slot.is_unsigned,
                      .buffer = slot.buffer,
                      .length = slot.length ? *slot.length : slot.buffer_length};
    std::string raw = cfg.mode == sql::TextMode::raw ? sql::mysql_param_raw(p, cfg.max_bind) : std::string();
    s.binds.set(i, sql::mysql_bind_type(p), raw, cfg.mode);
  }
}

}  // namespace

// --- connections ---------------------------------------------------------------------------------------

extern "C" MYSQL* mysql_real_connect(MYSQL* m, const char* host, const char* user, const char* passwd,
                                     const char* db, unsigned int port, const char* unix_socket,
                                     unsigned long flags) {
  auto real = TXRAY_REAL(mysql_real_connect, kLib);
  if (!real) return nullptr;
  return connect_hook(m, host, user, db, port, unix_socket,
                      [&] { return real(m, host, user, passwd, db, port, unix_socket, flags); });
}

extern "C" void mysql_close(MYSQL* m) {
  auto real = TXRAY_REAL(mysql_close, kLib);
  if (!real) return;
  std::unique_ptr<sql::MysqlConnection> c = m ? connections().take(m) : nullptr;
  HookGuard guard(HookFamily::sql);
  Transaction* tx = guard && m && c ? rec::current() : nullptr;
  if (!tx) return real(m);
  if (c->pending.active) {  // a send whose answer was never read
    c->pending.active = false;
    rec::close_sql(c->pending.step, {.text = &c->pending_text, .fingerprint = c->pending_fingerprint});
  }
  StepRef step = rec::open(tx, StepKind::MESSAGE);
  rec::set_text(step, "mysql_close " + c->label);
  real(m);
  SaveErrno keep;
  rec::close(step);
}

// --- queries -------------------------------------------------------------------------------------------

extern "C" int mysql_real_query(MYSQL* m, const char* q, unsigned long len) {
  auto real = TXRAY_REAL(mysql_real_query, kLib);
  if (!real) return 1;
  return query_hook(m, q, len, [&] { return real(m, q, len); });
}

extern "C" int mysql_query(MYSQL* m, const char* q) {
  auto real = TXRAY_REAL(mysql_query, kLib);
  if (!real) return 1;
  return query_hook(m, q, q ? std::strlen(q) : 0, [&] { return real(m, q); });
}

extern "C" int mysql_send_query(MYSQL* m, const char* q, unsigned long len) {
  auto real = TXRAY_REAL(mysql_send_query, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (!guard || !m) return real(m, q, len);
  Transaction* tx = rec::current();
  if (!tx) {
    forget_result(m);
    return real(m, q, len);
  }
  sql::MysqlConnection& c = state_of(m);
  c.last.active = false;
  sql::PendingQuery& pq = c.pending;
  if (pq.active) {  // a send whose answer was never read: its row ends here
    pq.active = false;
    rec::close_sql(pq.step, {.text = &c.pending_text, .fingerprint = c.pending_fingerprint});
  }
  Described d = describe(m, q, len);
  pq = {};
  socket_bytes(m, &pq.read0, &pq.written0);
  pq.step = rec::open(tx, StepKind::SQL);
  rec::set_text(pq.step, d.text);
  rec::set_fingerprint(pq.step, d.n.fingerprint);
  int rc = real(m, q, len);
  SaveErrno keep;
  if (rc != 0) {
    finish_query(tx, m, c, pq.step, d.text, d.n.fingerprint, true, pq.read0, pq.written0);
    return rc;
  }
  pq.active = true;
  c.pending_text = d.text;
  c.pending_fingerprint = d.n.fingerprint;
  return rc;
}

extern "C" my_bool mysql_read_query_result(MYSQL* m) {
  auto real = TXRAY_REAL(mysql_read_query_result, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (!guard || !m) return real(m);
  sql::MysqlConnection* c = connections().find(m);
  if (!c || !c->pending.active) return real(m);
  my_bool rc = real(m);
  SaveErrno keep;
  c->pending.active = false;
  Transaction* tx = rec::current();
  if (!tx || tx != c->pending.step.tx) {
    rec::close(c->pending.step);
    return rc;
  }
  finish_query(tx, m, *c, c->pending.step, c->pending_text, c->pending_fingerprint, rc != 0, c->pending.read0,
               c->pending.written0);
  return rc;
}

extern "C" MYSQL_RES* mysql_store_result(MYSQL* m) {
  auto real = TXRAY_REAL(mysql_store_result, kLib);
  if (!real) return nullptr;
  return result_hook<true>(m, [&] { return real(m); });
}

extern "C" MYSQL_RES* mysql_use_result(MYSQL* m) {
  auto real = TXRAY_REAL(mysql_use_result, kLib);
  if (!real) return nullptr;
  return result_hook<false>(m, [&] { return real(m); });
}

extern "C" MYSQL_ROW mysql_fetch_row(MYSQL_RES* res) {
  auto real = TXRAY_REAL(mysql_fetch_row, kLib);
  if (!real) return nullptr;
  HookGuard guard(HookFamily::sql);
  if (!guard || !res) return real(res);
  sql::MysqlResult* r = results().find(res);
  if (!r || !r->run.active) return real(res);  // a stored result: rows in memory, already counted
  uint64_t t0 = rec::now_ns();
  MYSQL_ROW row = real(res);
  SaveErrno keep;
  r->run.fetch_ns += rec::now_ns() - t0;
  if (row) {
    r->run.rows++;
    return row;
  }
  MYSQL* m = live_conn(r->conn);
  if (conn_errno(m) != 0) {
    Transaction* tx = rec::current();
    if (tx && tx == r->run.step.tx) fail_conn(tx, r->run.step, m);
  }
  end_run(r->run);
  return row;
}

extern "C" void mysql_free_result(MYSQL_RES* res) {
  auto real = TXRAY_REAL(mysql_free_result, kLib);
  if (!real) return;
  if (res) {
    // Forget it whatever the guard says: its address may be reused by the next result.
    std::unique_ptr<sql::MysqlResult> r = results().take(res);
    HookGuard guard(HookFamily::sql);
    if (r && guard) end_run(r->run);
  }
  real(res);
}

// --- prepared statements -------------------------------------------------------------------------------

extern "C" MYSQL_STMT* mysql_stmt_init(MYSQL* m) {
  auto real = TXRAY_REAL(mysql_stmt_init, kLib);
  if (!real) return nullptr;
  MYSQL_STMT* st = real(m);
  SaveErrno keep;
  HookGuard guard(HookFamily::sql);
  if (guard && st) statements().reset(st).conn = m;
  return st;
}

extern "C" int mysql_stmt_prepare(MYSQL_STMT* st, const char* q, unsigned long len) {
  auto real = TXRAY_REAL(mysql_stmt_prepare, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (!guard || !st) return real(st, q, len);
  sql::MysqlStatement* s = stmt_state(st, true);
  Transaction* tx = rec::current();
  // The text is normalized once here, for every execution (also outside a transaction).
  const auto& cfg = sql::settings();
  s->sql = sql::normalize(q ? std::string_view(q, len) : std::string_view(), cfg.mode, cfg.max_text,
                          dialect_of(live_conn(s->conn)));
  s->text = txray::SharedText(s->sql.text);
  s->params.clear();
  s->binds.clear();
  s->run.active = false;
  if (!tx) return real(st, q, len);
  StepRef step = rec::open(tx, StepKind::SQL);
  int rc = real(st, q, len);
  SaveErrno keep;
  txray::SharedText shown(cfg.mode == sql::TextMode::off ? std::string() : "PREPARE " + s->sql.text);
  if (rc != 0) fail_stmt(tx, step, st);
  rec::close_sql(step, {.text = &shown, .fingerprint = sql::fnv1a("PREPARE", s->sql.fingerprint)});
  return rc;
}

extern "C" my_bool mysql_stmt_bind_param(MYSQL_STMT* st, MYSQL_BIND* bnd) {
  auto real = TXRAY_REAL(mysql_stmt_bind_param, kLib);
  if (!real) return 1;
  my_bool rc = real(st, bnd);
  SaveErrno keep;
  HookGuard guard(HookFamily::sql);
  if (!guard || !st || rc != 0 || sql::settings().mode == sql::TextMode::off) return rc;
  sql::MysqlStatement* s = stmt_state(st, true);
  auto count = TXRAY_REAL(mysql_stmt_param_count, kLib);
  unsigned long n = count ? count(st) : 0;
  s->params.clear();
  if (!bnd) return rc;
  s->params.reserve(n);
  for (unsigned long i = 0; i < n; ++i) {
    const MYSQL_BIND& b = bnd[i];
    s->params.push_back({.type = int(b.buffer_type),
                         .is_null = reinterpret_cast<const char*>(b.is_null),
                         .is_null_value = b.is_null_value != 0,
                         .is_unsigned = b.is_unsigned != 0,
                         .buffer = b.buffer,
                         .length = b.length,
                         .buffer_length = b.buffer_length});
  }
  return rc;
}

extern "C" int mysql_stmt_execute(MYSQL_STMT* st) {
  auto real = TXRAY_REAL(mysql_stmt_execute, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (!guard || !st) return real(st);
  Transaction* tx = rec::current();
  sql::MysqlStatement* s = statements().find(st);
  if (s) end_run(s->run);
  if (!tx || !s) return real(st);
  read_params(*s);
  MYSQL* m = live_conn(s->conn);
  uint64_t r0 = 0, w0 = 0;
  socket_bytes(m, &r0, &w0);
  StepRef step = rec::open(tx, StepKind::SQL);
  int rc = real(st);
  SaveErrno keep;
  uint64_t r1 = 0, w1 = 0;
  socket_bytes(m, &r1, &w1);
  if (r1 >= r0 && w1 >= w0 && (r1 > r0 || w1 > w0)) rec::add_bytes(step, r1 - r0, w1 - w0);
  rec::SqlRow row{.text = &s->text,
                  .fingerprint = s->sql.fingerprint,
                  .binds = s->binds.empty() ? nullptr : &s->binds.shared()};
  if (rc != 0) {
    fail_stmt(tx, step, st);
  } else {
    auto fields = TXRAY_REAL(mysql_stmt_field_count, kLib);
    auto affected = TXRAY_REAL(mysql_stmt_affected_rows, kLib);
    if (fields && fields(st) > 0) {
      row.rows = 0;
      s->run = {.active = true, .step = step, .fingerprint = s->sql.fingerprint, .rows = 0, .fetch_ns = 0};
    } else if (affected) {
      unsigned long long n = affected(st);
      if (n != ~0ull) row.changes = int64_t(n);
    }
  }
  rec::close_sql(step, row);
  return rc;
}

extern "C" int mysql_stmt_store_result(MYSQL_STMT* st) {
  auto real = TXRAY_REAL(mysql_stmt_store_result, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (!guard || !st) return real(st);
  sql::MysqlStatement* s = statements().find(st);
  if (!s || !s->run.active) return real(st);
  uint64_t t0 = rec::now_ns();
  int rc = real(st);
  SaveErrno keep;
  s->run.fetch_ns += rec::now_ns() - t0;
  if (rc != 0) {
    Transaction* tx = rec::current();
    if (tx && tx == s->run.step.tx) fail_stmt(tx, s->run.step, st);
  } else if (auto num = TXRAY_REAL(mysql_stmt_num_rows, kLib)) {
    s->run.rows = int64_t(num(st));
  }
  end_run(s->run);
  return rc;
}

extern "C" int mysql_stmt_fetch(MYSQL_STMT* st) {
  auto real = TXRAY_REAL(mysql_stmt_fetch, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (!guard || !st) return real(st);
  sql::MysqlStatement* s = statements().find(st);
  if (!s || !s->run.active) return real(st);  // stored: rows in memory, already counted
  uint64_t t0 = rec::now_ns();
  int rc = real(st);
  SaveErrno keep;
  s->run.fetch_ns += rec::now_ns() - t0;
  if (rc == 0 || rc == MYSQL_DATA_TRUNCATED) {
    s->run.rows++;
    return rc;
  }
  if (rc != MYSQL_NO_DATA) {
    Transaction* tx = rec::current();
    if (tx && tx == s->run.step.tx) fail_stmt(tx, s->run.step, st);
  }
  end_run(s->run);
  return rc;
}

extern "C" my_bool mysql_stmt_free_result(MYSQL_STMT* st) {
  auto real = TXRAY_REAL(mysql_stmt_free_result, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (guard && st)
    if (sql::MysqlStatement* s = statements().find(st)) end_run(s->run);
  return real(st);
}

extern "C" my_bool mysql_stmt_reset(MYSQL_STMT* st) {
  auto real = TXRAY_REAL(mysql_stmt_reset, kLib);
  if (!real) return 1;
  HookGuard guard(HookFamily::sql);
  if (guard && st)
    if (sql::MysqlStatement* s = statements().find(st)) end_run(s->run);
  return real(st);
}

extern "C" my_bool mysql_stmt_close(MYSQL_STMT* st) {
  auto real = TXRAY_REAL(mysql_stmt_close, kLib);
  if (!real) return 1;
  if (st) {
    std::unique_ptr<sql::MysqlStatement> s = statements().take(st);
    HookGuard guard(HookFamily::sql);
    if (s && guard) end_run(s->run);
  }
  return real(st);
}
