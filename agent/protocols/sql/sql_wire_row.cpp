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

void retext_row(WireRow& r, const StatementText& t) {
  if (!r.step) return;
  rec::set_text(r.step, t.text);
  rec::set_fingerprint(r.step, t.fingerprint);
  r.fingerprint = t.fingerprint;
}

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

void set_row_error(WireRow& r, std::string_view error) {
  if (r.failed || !rec::usable(r.step)) return;
  rec::set_error(r.step, error);
  rec::mark_failed(r.step.tx, error);
}

}  // namespace txray::sql
