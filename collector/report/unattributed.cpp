#include "unattributed.h"

namespace txray::report {

void count_unattributed(const Db& db, const Options& opt, Summary& s) {
  // One WHERE for the rows and the folded summaries; `at` is the time the filter looks at.
  auto where = [&](const std::string& at) {
    std::string w = " WHERE t.kind = 'unattributed' AND x.kind NOT IN ('START', 'END')";
    if (!opt.app.empty()) w += " AND t.app = :app";
    if (opt.since_unix_ns) w += " AND " + at + " >= :since";
    if (opt.until_unix_ns) w += " AND " + at + " <= :until";
    return w;
  };
  Stmt st(db, "SELECT kind, sum(n) FROM ("
              "SELECT x.kind AS kind, count(*) AS n FROM transactions t JOIN steps x ON x.tx_id = t.id" +
                  where("t.start_unix_ns + x.start_offset_ns") +
                  " GROUP BY x.kind UNION ALL "
                  "SELECT x.kind, sum(x.count) FROM transactions t JOIN step_summaries x ON x.tx_id = t.id" +
                  where("t.start_unix_ns") + " GROUP BY x.kind) GROUP BY kind ORDER BY kind");
  auto bind = [&](const char* name, auto value) {
    if (int i = sqlite3_bind_parameter_index(st.raw(), name); i > 0) st.bind(i, value);
  };
  if (!opt.app.empty()) bind(":app", opt.app);
  if (opt.since_unix_ns) bind(":since", *opt.since_unix_ns);
  if (opt.until_unix_ns) bind(":until", *opt.until_unix_ns);
  s.unattributed_steps = 0;
  s.unattributed_by_kind.clear();
  while (st.step()) {
    s.unattributed_by_kind[std::string(st.text(0))] = st.i64(1);
    s.unattributed_steps += st.i64(1);
  }
}

}  // namespace txray::report
