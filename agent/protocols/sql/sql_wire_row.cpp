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
  r.step = rec::open_unnested(tx, StepKind::SQL);
  if (!r.step) return;
  rec::set_text(r.step, t.text);
  rec::set_fingerprint(r.step, t.fingerprint);
  if (!params.empty()) rec::add_attr(r.step, "params", params);
  counters_of(slot, &r.read0, &r.written0);
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
  if (rec::usable(r.step)) {
    if (!error.empty() && !r.failed) {
      rec::set_error(r.step, error);
      rec::mark_failed(r.step.tx, error);
    }
    rec::set_rows(r.step, r.rows);
    rec::set_changes(r.step, r.changes);
    uint64_t rd, wr;
    counters_of(slot, &rd, &wr);
    if (rd >= r.read0 && wr >= r.written0) rec::add_bytes(r.step, rd - r.read0, wr - r.written0);
    // The elapsed the recorder gave the row (or its summary line when it was folded at close): the SQL
    // total is their exact sum.
    uint64_t el = rec::close(r.step);
    rec::add_totals(r.step.tx, {.sql_ns = el, .sql_count = 1});
  }
  r = WireRow{};
}

}  // namespace txray::sql
