#include "drops.h"

namespace txray::report {

void count_drops(const Db& db, const Options& opt, Summary& s) {
  s.dropped_transactions = 0;
  s.dropped_by_reason.clear();
  {
    Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='drop_windows'");
    has.step();
    if (has.i64(0) == 0) return;
  }
  std::string sql = "SELECT w.reason, sum(w.count) FROM drop_windows w JOIN agents a ON a.id = w.agent_id WHERE 1";
  if (!opt.app.empty()) sql += " AND a.app = :app";
  if (opt.since_unix_ns) sql += " AND w.last_unix_ns >= :since";
  if (opt.until_unix_ns) sql += " AND w.first_unix_ns <= :until";
  sql += " GROUP BY w.reason ORDER BY w.reason";
  Stmt st(db, sql);
  auto bind = [&](const char* name, auto value) {
    if (int i = sqlite3_bind_parameter_index(st.raw(), name); i > 0) st.bind(i, value);
  };
  if (!opt.app.empty()) bind(":app", opt.app);
  if (opt.since_unix_ns) bind(":since", *opt.since_unix_ns);
  if (opt.until_unix_ns) bind(":until", *opt.until_unix_ns);
  while (st.step()) {
    s.dropped_by_reason[std::string(st.text(0))] = st.i64(1);
    s.dropped_transactions += st.i64(1);
  }
}

}  // namespace txray::report
