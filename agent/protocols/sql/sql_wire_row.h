// One SQL row recorded by a wire protocol parser (protocols/pg, protocols/mysql) rather than a library
// hook: the same fields, attributes and totals as the libpq and libmariadb hooks' rows, so a statement
// reads the same whichever way it was seen.
//
// A row is opened when the statement's first message is written and closed when the reply that
// completes it is read — often on another thread or in another event-loop turn than the request's own,
// which is why every call here checks rec::usable() first and does nothing with a ref that is not (a
// request that ended meanwhile: its rows were closed when it ended).
//
// A row is nobody's parent and closes alone (rec::open_unnested): a driver that pipelines statements
// (asyncpg's executemany, JDBC's batches, several messages before one Sync) has them all open at once,
// each until its own reply, side by side rather than each inside the one before.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/recorder.h"
#include "core/shared_text.h"

namespace txray::sql {

// A statement's text as TXRAY_SQL says (sql_normalizer.h) and its fingerprint: computed once per
// prepared statement (or per simple query) and shared by the rows of its executions.
struct StatementText {
  SharedText text;
  uint64_t fingerprint = 0;
};
StatementText statement_text(std::string_view sql);

// Bytes read and written on a connection so far (its stream's own positions, or the socket's counters).
struct StreamPos {
  uint64_t read = 0, written = 0;
};

struct WireRow {
  StepRef step;
  uint64_t fingerprint = 0;          // the row's (set again when it closes, with rows and bytes)
  uint64_t read0 = 0, written0 = 0;  // the socket's counters when the row opened
  int64_t rows = -1;                 // rows returned (DataRow / result-set rows); -1: none seen
  int64_t changes = -1;              // rows an INSERT/UPDATE/DELETE/COPY… changed; -1: not such a statement
  bool failed = false;
  explicit operator bool() const { return bool(step); }
};

// Opens r in tx (nothing when tx is null): text, fingerprint, attribute "params" when `params` is not
// empty (already formatted and masked: sql_binds.h), and where the stream is now (`at`).
// The text is the row's from its start, so that a transaction which ends before the reply shows it.
// Inline (as close_row): a wire statement's row is the hot path of its parser.
inline void open_row(WireRow& r, Transaction* tx, const StatementText& t, std::string_view params, StreamPos at) {
  r = WireRow{};
  if (!tx) return;
  r.step = rec::open_unnested(tx, StepKind::SQL, t.text, t.fingerprint, params.empty() ? std::string_view() : "params",
                              params);
  if (!r.step) return;
  r.fingerprint = t.fingerprint;
  r.read0 = at.read;
  r.written0 = at.written;
}

// rows / changes add up over the statement's results.
inline void add_rows(WireRow& r, int64_t n) { r.rows = (r.rows < 0 ? 0 : r.rows) + n; }
inline void add_changes(WireRow& r, int64_t n) { r.changes = (r.changes < 0 ? 0 : r.changes) + n; }

// The server refused the statement: error "<severity> <sqlstate>: <message>", attribute "sqlstate", and the
// transaction marked failed (the first error of a row only).
void fail_row(WireRow& r, std::string_view severity, std::string_view sqlstate, std::string_view message);

// Sets the row's text and fingerprint from now on (a Parse found to be a prepare: "PREPARE name AS …").
void retext_row(WireRow& r, const StatementText& t);

// Closes r at `at`: rows, changes, the bytes read and written on the connection since it opened, the elapsed time
// into the transaction's SQL totals (one recorder entry: rec::close_sql). `error` (when not empty and no server error was set) says why the
// row ended early ("connection closed"). r is empty afterwards.
void set_row_error(WireRow& r, std::string_view error);  // close_row's `error`, when there was none
inline void close_row(WireRow& r, StreamPos at, std::string_view error = {}) {
  if (!r.step) return;
  if (!error.empty()) set_row_error(r, error);
  bool counted = at.read >= r.read0 && at.written >= r.written0;
  // The elapsed the recorder gave the row (or its summary line when it was folded at close) goes into
  // the SQL total in the same entry: the total is their exact sum.
  rec::close_sql(r.step, {.text = nullptr,  // set when the row opened
                          .fingerprint = r.fingerprint,
                          .rows = r.rows,
                          .changes = r.changes,
                          .bytes_read = counted ? at.read - r.read0 : 0,
                          .bytes_written = counted ? at.written - r.written0 : 0});
  r = WireRow{};
}

}  // namespace txray::sql
