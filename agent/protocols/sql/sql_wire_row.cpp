#include "protocols/sql/sql_wire_row.h"

#include <string>

#include "protocols/sql/sql_config.h"
#include "protocols/sql/sql_normalizer.h"

namespace txray::sql {

StatementText statement_text(std::string_view sql) {
  const Settings& cfg = settings();
  Normalized n = normalize(sql, cfg.mode, cfg.max_text);
  return {SharedText(n.text), n.fingerprint};
}

namespace {
void counters_of(const FdSlot* slot, uint64_t* read, uint64_t* written) {
  *read = slot ? slot->bytes_read.load(std::memory_order_relaxed) : 0;
  *written = slot ? slot->bytes_written.load(std::memory_order_relaxed) : 0;
}
}  // namespace

void open_row(WireRow& r, Transaction* tx, const StatementText& t, std::string_view params, const FdSlot* slot) {
  r = WireRow{};
  if (!tx) return;
  r.step = rec::open_unnested(tx, StepKind::SQL, t.text, t.fingerprint, params.empty() ? std::string_view() : "params",
                              params);
  if (!r.step) return;
  r.fingerprint = t.fingerprint;
  counters_of(slot, &r.read0, &r.written0);
}

void retext_row(WireRow& r, const StatementText& t) {
  if (!r.step) return;
  rec::set_text(r.step, t.text);
  rec::set_fingerprint(r.step, t.fingerprint);
  r.fingerprint = t.fingerprint;
}

void add_rows(WireRow& r, int64_t n) { r.rows = (r.rows < 0 ? 0 : r.rows) + n; }
void add_changes(WireRow& r, int64_t n) { r.changes = (r.changes < 0 ? 0 : r.changes) + n; }

void fail_row(WireRow& r, std::string_view severity, std::string_view sqlstate, std::string_view message) {
  if (!r.step || r.failed || !rec::usable(r.step)) return;
  r.failed = true;
  std::string e;
  e.reserve(severity.size() + sqlstate.size() + message.size() + 4);
  e.append(severity.empty() ? std::string_view("ERROR") : severity).append(" ");
  e.append(sqlstate.empty() ? std::string_view("?????") : sqlstate).append(": ").append(message);
  rec::set_error(r.step, e);
  rec::add_attr(r.step, "sqlstate", sqlstate.empty() ? std::string_view("?????") : sqlstate);
  rec::mark_failed(r.step.tx, e);
}

void close_row(WireRow& r, const FdSlot* slot, std::string_view error) {
  if (!r.step) return;
  if (!error.empty() && !r.failed && rec::usable(r.step)) {
    rec::set_error(r.step, error);
    rec::mark_failed(r.step.tx, error);
  }
  uint64_t rd, wr;
  counters_of(slot, &rd, &wr);
  bool counted = rd >= r.read0 && wr >= r.written0;
  // The elapsed the recorder gave the row (or its summary line when it was folded at close) goes into
  // the SQL total in the same entry: the total is their exact sum.
  rec::close_sql(r.step, {.text = nullptr,  // set when the row opened
                          .fingerprint = r.fingerprint,
                          .rows = r.rows,
                          .changes = r.changes,
                          .bytes_read = counted ? rd - r.read0 : 0,
                          .bytes_written = counted ? wr - r.written0 : 0});
  r = WireRow{};
}

}  // namespace txray::sql
