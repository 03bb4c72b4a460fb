#include "selection.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "format.h"

namespace txray::report {

const TxRec* Selection::find(int64_t id) const {
  auto it = std::lower_bound(txs.begin(), txs.end(), id, [](const TxRec& t, int64_t v) { return t.id < v; });
  return it != txs.end() && it->id == id ? &*it : nullptr;
}

void check_store(const Db& db) {
  Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
               "('meta', 'transactions', 'steps', 'step_summaries', 'texts')");
  has.step();
  if (has.i64(0) != 5) throw SqlError("not a txray store (tables meta, transactions, steps, texts missing)");
  Stmt v(db, "SELECT value FROM meta WHERE key = 'schema_version'");
  std::string version = v.step() ? std::string(v.text(0)) : "";
  if (version != "1") throw SqlError("unsupported store schema version '" + version + "' (expected 1)");
}

Selection select_transactions(const Db& db, const Options& opt) {
  Selection sel;
  std::string sql =
      "SELECT id, app, name, start_unix_ns, end_unix_ns, elapsed_ns, cpu_ns, sql_ns, fetch_ns, call_ns, "
      "(error IS NOT NULL AND error <> '') OR (kind = 'http' AND status >= 500) "
      "FROM transactions WHERE kind IS NOT 'unattributed'";  // containers of unattributed steps are no transactions
  std::vector<std::string> desc;
  if (opt.since_unix_ns) sql += " AND end_unix_ns >= :since", desc.push_back("end >= " + fmt_time(*opt.since_unix_ns));
  if (opt.until_unix_ns) sql += " AND end_unix_ns <= :until", desc.push_back("end <= " + fmt_time(*opt.until_unix_ns));
  if (!opt.app.empty()) sql += " AND app = :app", desc.push_back("app = " + opt.app);
  if (!opt.name.empty()) sql += " AND instr(name, :name) > 0", desc.push_back("name contains \"" + opt.name + "\"");
  const auto min_ns = static_cast<int64_t>(std::llround(opt.min_ms * 1e6));
  if (min_ns > 0) sql += " AND elapsed_ns >= :min", desc.push_back("response time >= " + fmt_ms(min_ns) + " ms");
  std::vector<int64_t> ids(opt.tx_ids);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (!ids.empty()) sql += " AND id = :id", desc.push_back(fmt_count(static_cast<int64_t>(ids.size())) + " chosen transactions");
  for (size_t i = 0; i < desc.size(); ++i) sel.filters += (i ? ", " : "") + desc[i];
  if (sel.filters.empty()) sel.filters = "none";

  Stmt st(db, sql);
  auto bind = [&](const char* name, auto value) {
    if (int i = sqlite3_bind_parameter_index(st.raw(), name); i > 0) st.bind(i, value);
  };
  std::unordered_map<std::string, int32_t> group_index;
  std::string key;
  auto run = [&] {
    while (st.step()) {
      key.assign(st.text(1));
      key += '\0';
      key += st.text(2);
      auto [it, added] = group_index.try_emplace(key, static_cast<int32_t>(sel.groups.size()));
      if (added) sel.groups.push_back({std::string(st.text(1)), std::string(st.text(2))});
      sel.txs.push_back(TxRec{st.i64(0), st.i64(3), st.i64(4), st.i64(5), st.i64(6), st.i64(7), st.i64(8),
                              st.i64(9), it->second, st.i64(10) != 0});
    }
  };
  auto bind_filters = [&] {
    if (opt.since_unix_ns) bind(":since", *opt.since_unix_ns);
    if (opt.until_unix_ns) bind(":until", *opt.until_unix_ns);
    if (!opt.app.empty()) bind(":app", opt.app);
    if (!opt.name.empty()) bind(":name", opt.name);
    if (min_ns > 0) bind(":min", min_ns);
  };
  if (ids.empty()) {
    bind_filters();
    run();
  } else {
    for (int64_t id : ids) {
      st.reset();
      bind_filters();
      bind(":id", id);
      run();
    }
  }
  std::sort(sel.txs.begin(), sel.txs.end(), [](const TxRec& a, const TxRec& b) { return a.id < b.id; });
  return sel;
}

}  // namespace txray::report
