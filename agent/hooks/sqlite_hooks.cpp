// SQL steps for SQLite (libsqlite3, also when it was dlopen'ed in local scope as Python does: every real
// function is looked up with the "libsqlite3.so.0" fallback, PITFALLS 1). The agent never links
// libsqlite3: every SQLite function it calls is resolved at run time too.
//
// One SQL row per execution of a statement, opened by the first sqlite3_step after prepare/reset:
//   elapsed   = that first call (time to the first row, or to done)
//   rows      = rows returned; fetch_ns = time spent in the later sqlite3_step calls (the other rows)
//   changes   = rows a write changed (sqlite3_total_changes delta; not set for read-only statements)
//   status/error = result code and sqlite3_errmsg on failure (the transaction is marked failed too)
//   text / fingerprint = the statement normalized once at prepare (sql_normalizer.h); attribute
//   "binds" = the bound parameters (masked to their types by default).
// The row is closed when the first call returns, so that what the program does between fetches never
// nests under it; rows and fetch time are added to it when the execution ends (SQLITE_DONE, an error,
// sqlite3_reset or sqlite3_finalize). sqlite3_exec is one row for its whole text (rows = callback rows).
// A prepare that fails (syntax error, no such table) is a failed SQL row of its own.
// Connections: sqlite3_open / sqlite3_open_v2 are DB_CONNECT rows (text sqlite:<file>). SQLite reads the
// schema lazily, in the first prepare on a new connection, so that prepare is a second DB_CONNECT row
// ("… (schema)"): what a service that opens a connection per request pays beyond the open.
// The hooks hold the sql family guard while libsqlite3 runs, so statements it runs on its own behalf
// (schema parsing via sqlite3_exec, PITFALLS 2) are not rows.
#include <sqlite3.h>

#include <cstdio>
#include <cstring>
#include <string>

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

constexpr const char* kLib = "libsqlite3.so.0";

sql::HandleTable<sql::SqliteStatement>& statements() {
  static auto* t = new sql::HandleTable<sql::SqliteStatement>();  // never freed: hooks run during exit
  return *t;
}

// Library functions the hooks call but do not intercept.
const char* stmt_sql(sqlite3_stmt* st) {
  auto f = TXRAY_REAL(sqlite3_sql, kLib);
  return f ? f(st) : nullptr;
}
sqlite3* db_of(sqlite3_stmt* st) {
  auto f = TXRAY_REAL(sqlite3_db_handle, kLib);
  return f ? f(st) : nullptr;
}
bool is_readonly(sqlite3_stmt* st) {
  auto f = TXRAY_REAL(sqlite3_stmt_readonly, kLib);
  return f ? f(st) != 0 : true;
}
int64_t total_changes(sqlite3* db) {
  auto f = TXRAY_REAL(sqlite3_total_changes, kLib);
  return f && db ? f(db) : 0;
}
std::string error_text(sqlite3* db, int rc) {
  auto msg = TXRAY_REAL(sqlite3_errmsg, kLib);
  const char* m = msg && db ? msg(db) : nullptr;
  char head[48];
  std::snprintf(head, sizeof head, "SQLite error %d: ", rc);
  return std::string(head) + (m ? m : "unknown error");
}

// Registers a prepared statement with its normalized text (a fresh state: the address may be reused).
sql::SqliteStatement& remember(sqlite3_stmt* st) {
  const char* text = stmt_sql(st);
  sql::SqliteStatement& s = statements().reset(st);
  const auto& cfg = sql::settings();
  s.sql = sql::normalize(text ? text : "", cfg.mode, cfg.max_text);
  s.text = txray::SharedText(s.sql.text);
  s.db = db_of(st);
  s.writes = !is_readonly(st);
  return s;
}

// The agent's state for a statement, created from its text when the statement was prepared by a path
// the hooks did not see (before the agent started, or with the guard off).
sql::SqliteStatement* state_of(sqlite3_stmt* st, bool create) {
  if (!st) return nullptr;
  sql::SqliteStatement* s = statements().find(st);
  if (s || !create) return s;
  return &remember(st);
}

// Adds time and rows of the fetches to the execution's row, and fetch time to the transaction totals.
void end_execution(sql::OpenExecution& run) {
  if (!run.active) return;
  run.active = false;
  // The first row was counted when it came; the others go to the row, or to its summary line when the
  // row was folded past the step limit. The fetch time goes to the row and the transaction's total.
  rec::end_fetch(run.step, run.fingerprint, run.rows - 1, run.fetch_ns);
}

void fail(Transaction* tx, StepRef& step, sqlite3* db, int rc) {
  std::string err = error_text(db, rc);
  rec::set_error(step, err);
  rec::set_status(step, rc);
  rec::mark_failed(tx, err);
}

// The first sqlite3_step of an execution: opens, runs and closes its row.
int first_step(Transaction* tx, sqlite3_stmt* st, sql::SqliteStatement* s, int (*real)(sqlite3_stmt*)) {
  auto* db = static_cast<sqlite3*>(s->db);
  bool writes = s->writes;
  int64_t changes0 = writes ? total_changes(db) : 0;
  StepRef step = rec::open(tx, StepKind::SQL);
  int rc = real(st);
  SaveErrno keep;
  rec::SqlRow row{.text = &s->text,
                  .fingerprint = s->sql.fingerprint,
                  .binds = s->binds.empty() ? nullptr : &s->binds.shared(),
                  .rows = rc == SQLITE_ROW ? 1 : 0};
  if (rc == SQLITE_ROW) {
    s->run = {.active = true, .step = step, .fingerprint = s->sql.fingerprint, .rows = 1, .fetch_ns = 0};
  } else {
    if (writes && rc == SQLITE_DONE) row.changes = total_changes(db) - changes0;
    if (rc != SQLITE_DONE) fail(tx, step, db, rc);
  }
  rec::close_sql(step, row);
  return rc;
}

// A later sqlite3_step of an execution in progress: fetch time and rows.
int next_step(sqlite3_stmt* st, sql::SqliteStatement* s, int (*real)(sqlite3_stmt*)) {
  uint64_t t0 = rec::now_ns();
  int rc = real(st);
  SaveErrno keep;
  s->run.fetch_ns += rec::now_ns() - t0;
  if (rc == SQLITE_ROW) {
    s->run.rows++;
    return rc;
  }
  if (rc != SQLITE_DONE) {  // failed while fetching (interrupted, I/O error, a function raised)
    std::string err = error_text(db_of(st), rc);
    rec::set_error(s->run.step, err);
    rec::set_status(s->run.step, rc);
    if (Transaction* tx = rec::current(); tx && tx == s->run.step.tx) rec::mark_failed(tx, err);
  }
  end_execution(s->run);
  return rc;
}

struct ExecContext {
  int (*callback)(void*, int, char**, char**);
  void* arg;
  int64_t rows;
};

int counting_callback(void* p, int n, char** values, char** names) {
  auto* c = static_cast<ExecContext*>(p);
  c->rows++;
  return c->callback(c->arg, n, values, names);
}

// Records a bind on the statement's state (the raw text is only built in raw mode). The caller holds
// the sql guard.
template <typename MakeRaw>
void record_bind(sqlite3_stmt* st, int index, sql::BindType type, MakeRaw make_raw) {
  const auto& cfg = sql::settings();
  if (cfg.mode == sql::TextMode::off) return;
  sql::SqliteStatement* s = state_of(st, true);
  if (!s) return;
  if (cfg.mode == sql::TextMode::raw) s->binds.set(index, type, make_raw(cfg.max_bind), cfg.mode);
  else s->binds.set(index, type, {}, cfg.mode);
}

// The body every sqlite3_bind_* hook shares: the sql guard is held across the real call (sqlite3_bind_int
// calls sqlite3_bind_int64 through the PLT, and the bind is recorded once, by the outer hook), and a
// successful bind is recorded with errno kept.
template <typename Real, typename MakeRaw, typename... Args>
int bind_through(Real real, sqlite3_stmt* st, int i, sql::BindType type, MakeRaw make_raw, Args... args) {
  if (!real) return SQLITE_MISUSE;
  HookGuard guard(HookFamily::sql);
  int rc = real(st, i, args...);
  if (guard && rc == SQLITE_OK) {
    SaveErrno keep;
    record_bind(st, i, type, make_raw);
  }
  return rc;
}

// A statement that failed to compile (syntax error, no such table) is a failed SQL row of its own: the
// program asked for it and got an error. `text` is UTF-8, or null for the UTF-16 variants.
void failed_prepare(sqlite3* db, const char* text, int n, int rc, uint64_t elapsed) {
  Transaction* tx = rec::current();
  if (!tx) return;
  const auto& cfg = sql::settings();
  std::string_view sv = !text ? std::string_view("(UTF-16 statement)")
                        : n < 0 ? std::string_view(text) : std::string_view(text, strnlen(text, size_t(n)));
  sql::Normalized norm = sql::normalize(sv, cfg.mode, cfg.max_text);
  StepRef step = rec::add(tx, StepKind::SQL, norm.text);
  rec::set_fingerprint(step, norm.fingerprint);
  rec::set_elapsed(step, elapsed);
  fail(tx, step, db, rc);
  rec::add_totals(tx, {.sql_ns = elapsed, .sql_count = 1});
}

// Connections opened on this thread whose schema is not read yet (their first prepare will): a few
// per thread, the oldest forgotten; a connection first used on another thread gets no schema row.
struct FreshConnection {
  sqlite3* db = nullptr;
  char label[120] = "";
};
constexpr int kFresh = 8;
thread_local FreshConnection t_fresh[kFresh];
thread_local unsigned t_fresh_next = 0;

void forget_fresh(sqlite3* db) {
  for (auto& f : t_fresh)
    if (f.db == db) f.db = nullptr;
}

// sqlite3_open / sqlite3_open_v2: a DB_CONNECT row around the real call.
template <typename Call>
int open_hook(const char* filename, sqlite3** out, Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard) return call();
  Transaction* tx = rec::current();
  StepRef step = tx ? rec::open(tx, StepKind::DB_CONNECT) : StepRef{};
  int rc = call();
  SaveErrno keep;
  sqlite3* db = out ? *out : nullptr;
  char label[sizeof FreshConnection::label];
  snprintf(label, sizeof label, "sqlite:%s", filename && *filename ? filename : "(temporary)");
  if (db) {
    forget_fresh(db);
    FreshConnection& f = t_fresh[t_fresh_next++ % kFresh];
    f.db = db;
    memcpy(f.label, label, sizeof label);
  }
  if (!tx) return rc;
  rec::set_text(step, label);
  rec::add_attr(step, "database", filename ? filename : "");
  if (rc != SQLITE_OK) fail(tx, step, db, rc);
  rec::close(step);
  return rc;
}

// Every prepare variant: the real call with the sql guard held (so the library's own nested prepares
// are not seen), then the statement is remembered, or the failure recorded. The first prepare on a
// connection opened on this thread also read its schema: a DB_CONNECT row of that time.
template <typename Call>
int prepare_hook(sqlite3* db, const char* utf8_text, int n, sqlite3_stmt** out, Call call) {
  HookGuard guard(HookFamily::sql);
  if (!guard) return call();
  StepRef schema;
  if (db)
    for (auto& f : t_fresh) {
      if (f.db != db) continue;
      f.db = nullptr;
      if (Transaction* tx = rec::current()) {
        schema = rec::open(tx, StepKind::DB_CONNECT);
        char text[sizeof f.label + 16];
        snprintf(text, sizeof text, "%s (schema)", f.label);
        rec::set_text(schema, text);
      }
      break;
    }
  uint64_t t0 = rec::now_ns();
  int rc = call();
  uint64_t t1 = rec::now_ns();
  SaveErrno keep;
  if (schema) {
    rec::add_attr(schema, "what", "schema read by the connection's first prepare");
    rec::close(schema);
  }
  if (rc == SQLITE_OK && out && *out) (void)remember(*out);
  else if (rc != SQLITE_OK) failed_prepare(db, utf8_text, n, rc, t1 - t0);
  return rc;
}

}  // namespace

// --- connections ---------------------------------------------------------------------------------------

extern "C" int sqlite3_open(const char* filename, sqlite3** out) {
  auto real = TXRAY_REAL(sqlite3_open, kLib);
  if (!real) return SQLITE_MISUSE;
  return open_hook(filename, out, [&] { return real(filename, out); });
}

extern "C" int sqlite3_open_v2(const char* filename, sqlite3** out, int flags, const char* vfs) {
  auto real = TXRAY_REAL(sqlite3_open_v2, kLib);
  if (!real) return SQLITE_MISUSE;
  return open_hook(filename, out, [&] { return real(filename, out, flags, vfs); });
}

extern "C" int sqlite3_close(sqlite3* db) {
  auto real = TXRAY_REAL(sqlite3_close, kLib);
  if (!real) return SQLITE_MISUSE;
  forget_fresh(db);
  return real(db);
}

extern "C" int sqlite3_close_v2(sqlite3* db) {
  auto real = TXRAY_REAL(sqlite3_close_v2, kLib);
  if (!real) return SQLITE_MISUSE;
  forget_fresh(db);
  return real(db);
}

// --- prepare family ------------------------------------------------------------------------------------

extern "C" int sqlite3_prepare(sqlite3* db, const char* sql, int n, sqlite3_stmt** out, const char** tail) {
  auto real = TXRAY_REAL(sqlite3_prepare, kLib);
  if (!real) return SQLITE_MISUSE;
  return prepare_hook(db, sql, n, out, [&] { return real(db, sql, n, out, tail); });
}

extern "C" int sqlite3_prepare_v2(sqlite3* db, const char* sql, int n, sqlite3_stmt** out, const char** tail) {
  auto real = TXRAY_REAL(sqlite3_prepare_v2, kLib);
  if (!real) return SQLITE_MISUSE;
  return prepare_hook(db, sql, n, out, [&] { return real(db, sql, n, out, tail); });
}

extern "C" int sqlite3_prepare_v3(sqlite3* db, const char* sql, int n, unsigned int flags, sqlite3_stmt** out,
                                  const char** tail) {
  auto real = TXRAY_REAL(sqlite3_prepare_v3, kLib);
  if (!real) return SQLITE_MISUSE;
  return prepare_hook(db, sql, n, out, [&] { return real(db, sql, n, flags, out, tail); });
}

extern "C" int sqlite3_prepare16(sqlite3* db, const void* sql, int n, sqlite3_stmt** out, const void** tail) {
  auto real = TXRAY_REAL(sqlite3_prepare16, kLib);
  if (!real) return SQLITE_MISUSE;
  return prepare_hook(db, nullptr, n, out, [&] { return real(db, sql, n, out, tail); });
}

extern "C" int sqlite3_prepare16_v2(sqlite3* db, const void* sql, int n, sqlite3_stmt** out, const void** tail) {
  auto real = TXRAY_REAL(sqlite3_prepare16_v2, kLib);
  if (!real) return SQLITE_MISUSE;
  return prepare_hook(db, nullptr, n, out, [&] { return real(db, sql, n, out, tail); });
}

extern "C" int sqlite3_prepare16_v3(sqlite3* db, const void* sql, int n, unsigned int flags, sqlite3_stmt** out,
                                    const void** tail) {
  auto real = TXRAY_REAL(sqlite3_prepare16_v3, kLib);
  if (!real) return SQLITE_MISUSE;
  return prepare_hook(db, nullptr, n, out, [&] { return real(db, sql, n, flags, out, tail); });
}

// --- execution -----------------------------------------------------------------------------------------

extern "C" int sqlite3_step(sqlite3_stmt* st) {
  auto real = TXRAY_REAL(sqlite3_step, kLib);
  if (!real) return SQLITE_MISUSE;
  HookGuard guard(HookFamily::sql);
  if (!guard || !st) return real(st);
  Transaction* tx = rec::current();
  sql::SqliteStatement* s = state_of(st, tx != nullptr);
  if (s && s->run.active) {
    // A fetch of the execution in progress, unless its transaction is gone (then it just ends).
    if (tx && tx == s->run.step.tx) return next_step(st, s, real);
    end_execution(s->run);
  }
  if (!tx || !s) return real(st);
  return first_step(tx, st, s, real);
}

extern "C" int sqlite3_reset(sqlite3_stmt* st) {
  auto real = TXRAY_REAL(sqlite3_reset, kLib);
  if (!real) return SQLITE_MISUSE;
  HookGuard guard(HookFamily::sql);
  if (guard && st) {
    if (sql::SqliteStatement* s = statements().find(st)) end_execution(s->run);
  }
  return real(st);
}

extern "C" int sqlite3_finalize(sqlite3_stmt* st) {
  auto real = TXRAY_REAL(sqlite3_finalize, kLib);
  if (!real) return SQLITE_MISUSE;
  if (st) {
    // Forget the statement whatever the guard says: its address may be reused by the next prepare.
    std::unique_ptr<sql::SqliteStatement> s = statements().take(st);
    HookGuard guard(HookFamily::sql);
    if (s && guard) end_execution(s->run);
  }
  return real(st);
}

extern "C" int sqlite3_exec(sqlite3* db, const char* text, int (*callback)(void*, int, char**, char**), void* arg,
                            char** errmsg) {
  auto real = TXRAY_REAL(sqlite3_exec, kLib);
  if (!real) return SQLITE_MISUSE;
  HookGuard guard(HookFamily::sql);
  if (!guard) return real(db, text, callback, arg, errmsg);
  Transaction* tx = rec::current();
  if (!tx) return real(db, text, callback, arg, errmsg);
  const auto& cfg = sql::settings();
  sql::Normalized n = sql::normalize(text ? text : "", cfg.mode, cfg.max_text);
  ExecContext ctx{callback, arg, 0};
  int64_t changes0 = total_changes(db);
  StepRef step = rec::open(tx, StepKind::SQL);
  int rc = real(db, text, callback ? counting_callback : nullptr, callback ? &ctx : nullptr, errmsg);
  SaveErrno keep;
  txray::SharedText shown(n.text);
  if (rc != SQLITE_OK) fail(tx, step, db, rc);
  rec::close_sql(step, {.text = &shown,
                        .fingerprint = n.fingerprint,
                        .rows = callback ? ctx.rows : -1,
                        .changes = total_changes(db) - changes0});
  return rc;
}

// --- binds ---------------------------------------------------------------------------------------------
// Each hook says how to describe its value (raw mode); bind_through does the rest.

extern "C" int sqlite3_bind_int(sqlite3_stmt* st, int i, int v) {
  return bind_through(TXRAY_REAL(sqlite3_bind_int, kLib), st, i, sql::BindType::integer,
                      [&](size_t) { return std::to_string(v); }, v);
}

extern "C" int sqlite3_bind_int64(sqlite3_stmt* st, int i, sqlite3_int64 v) {
  return bind_through(TXRAY_REAL(sqlite3_bind_int64, kLib), st, i, sql::BindType::integer,
                      [&](size_t) { return std::to_string(v); }, v);
}

extern "C" int sqlite3_bind_double(sqlite3_stmt* st, int i, double v) {
  auto describe = [&](size_t) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  return bind_through(TXRAY_REAL(sqlite3_bind_double, kLib), st, i, sql::BindType::real, describe, v);
}

extern "C" int sqlite3_bind_null(sqlite3_stmt* st, int i) {
  return bind_through(TXRAY_REAL(sqlite3_bind_null, kLib), st, i, sql::BindType::null,
                      [](size_t) { return std::string("NULL"); });
}

extern "C" int sqlite3_bind_text(sqlite3_stmt* st, int i, const char* v, int n, void (*dtor)(void*)) {
  // Read the value before the call: with a destructor other than SQLITE_STATIC/TRANSIENT, SQLite may
  // free it when the call fails.
  std::string raw;
  if (v && sql::settings().mode == sql::TextMode::raw)
    raw = sql::quote_value(n < 0 ? std::string_view(v) : std::string_view(v, size_t(n)), sql::settings().max_bind);
  return bind_through(TXRAY_REAL(sqlite3_bind_text, kLib), st, i, v ? sql::BindType::text : sql::BindType::null,
                      [&](size_t) { return v ? raw : "NULL"; }, v, n, dtor);
}

extern "C" int sqlite3_bind_text64(sqlite3_stmt* st, int i, const char* v, sqlite3_uint64 n, void (*dtor)(void*),
                                   unsigned char encoding) {
  std::string raw;
  if (v && sql::settings().mode == sql::TextMode::raw) {
    raw = encoding == SQLITE_UTF8 ? sql::quote_value(std::string_view(v, size_t(n)), sql::settings().max_bind)
                                  : "text16(" + std::to_string(n) + ")";
  }
  return bind_through(TXRAY_REAL(sqlite3_bind_text64, kLib), st, i, v ? sql::BindType::text : sql::BindType::null,
                      [&](size_t) { return v ? raw : "NULL"; }, v, n, dtor, encoding);
}

extern "C" int sqlite3_bind_text16(sqlite3_stmt* st, int i, const void* v, int n, void (*dtor)(void*)) {
  return bind_through(TXRAY_REAL(sqlite3_bind_text16, kLib), st, i, v ? sql::BindType::text : sql::BindType::null,
                      [&](size_t) { return v ? "text16(" + std::to_string(n) + ")" : std::string("NULL"); },
                      v, n, dtor);
}

extern "C" int sqlite3_bind_blob(sqlite3_stmt* st, int i, const void* v, int n, void (*dtor)(void*)) {
  return bind_through(TXRAY_REAL(sqlite3_bind_blob, kLib), st, i, v ? sql::BindType::blob : sql::BindType::null,
                      [&](size_t) { return v ? "blob(" + std::to_string(n) + ")" : std::string("NULL"); },
                      v, n, dtor);
}

extern "C" int sqlite3_bind_blob64(sqlite3_stmt* st, int i, const void* v, sqlite3_uint64 n, void (*dtor)(void*)) {
  return bind_through(TXRAY_REAL(sqlite3_bind_blob64, kLib), st, i, v ? sql::BindType::blob : sql::BindType::null,
                      [&](size_t) { return v ? "blob(" + std::to_string(n) + ")" : std::string("NULL"); },
                      v, n, dtor);
}

extern "C" int sqlite3_bind_zeroblob(sqlite3_stmt* st, int i, int n) {
  return bind_through(TXRAY_REAL(sqlite3_bind_zeroblob, kLib), st, i, sql::BindType::zeroblob,
                      [&](size_t) { return "zeroblob(" + std::to_string(n) + ")"; }, n);
}

extern "C" int sqlite3_bind_zeroblob64(sqlite3_stmt* st, int i, sqlite3_uint64 n) {
  return bind_through(TXRAY_REAL(sqlite3_bind_zeroblob64, kLib), st, i, sql::BindType::zeroblob,
                      [&](size_t) { return "zeroblob(" + std::to_string(n) + ")"; }, n);
}

extern "C" int sqlite3_bind_value(sqlite3_stmt* st, int i, const sqlite3_value* v) {
  return bind_through(TXRAY_REAL(sqlite3_bind_value, kLib), st, i, sql::BindType::value,
                      [](size_t) { return std::string("value"); }, v);
}

extern "C" int sqlite3_bind_pointer(sqlite3_stmt* st, int i, void* p, const char* type, void (*dtor)(void*)) {
  return bind_through(TXRAY_REAL(sqlite3_bind_pointer, kLib), st, i, sql::BindType::pointer,
                      [](size_t) { return std::string("pointer"); }, p, type, dtor);
}

extern "C" int sqlite3_clear_bindings(sqlite3_stmt* st) {
  auto real = TXRAY_REAL(sqlite3_clear_bindings, kLib);
  if (!real) return SQLITE_MISUSE;
  int rc = real(st);
  SaveErrno keep;
  HookGuard guard(HookFamily::sql);
  if (guard && st) {
    if (sql::SqliteStatement* s = statements().find(st)) s->binds.clear();
  }
  return rc;
}
