#include "shed.h"

#include <cstdio>
#include <map>

#include "show_format.h"

namespace txray::show {

std::vector<ShedRow> load_shed_rows(const Db& db, const std::string& app) {
  std::vector<ShedRow> rows;
  {
    Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='shed_counts'");
    has.step();
    if (has.i64(0) == 0) return rows;
  }
  Stmt st(db,
          "SELECT app, name, kind, origin, minute_unix_ns, sum(count), sum(elapsed_ns) FROM shed_counts"
          " WHERE (?1 = '' OR app = ?1) GROUP BY app, name, kind, origin, minute_unix_ns"
          " ORDER BY minute_unix_ns, app, name, origin");
  st.bind(1, app);
  while (st.step())
    rows.push_back({st.text(0), st.text(1), st.text(2), st.text(3), st.i64(4), st.i64(5), st.i64(6)});
  return rows;
}

std::string shed_text(const std::vector<ShedRow>& rows) {
  std::map<std::string, int64_t> by_origin;
  int64_t total = 0;
  for (const auto& r : rows) by_origin[r.origin] += r.count, total += r.count;
  std::string out = "SHED  " + thousands(total) + " transactions counted but not stored (";
  bool first = true;
  for (const auto& [origin, n] : by_origin) {
    out += (first ? "" : ", ") + origin + " " + thousands(n);
    first = false;
  }
  out += ")\n";
  for (const auto& r : rows) {
    char mean[48];
    std::snprintf(mean, sizeof mean, "mean %s ms", ms_precise(r.count ? r.elapsed_ns / r.count : 0).c_str());
    out += "  " + r.app + "  " + r.name + "  " + date_time(r.minute_unix_ns).substr(0, 16) + "  " + r.origin + "  " +
           thousands(r.count) + "  " + mean + "\n";
  }
  return out;
}

std::string shed_note(const std::vector<ShedRow>& rows) {
  int64_t total = 0;
  for (const auto& r : rows) total += r.count;
  return "shed: " + thousands(total) + " transactions counted but not stored (txray show --shed)\n";
}

nlohmann::ordered_json shed_row_json(const ShedRow& r) {
  nlohmann::ordered_json j;
  j["app"] = r.app;
  j["name"] = r.name;
  j["kind"] = r.kind;
  j["origin"] = r.origin;
  j["minute_unix_ns"] = r.minute_unix_ns;
  j["minute"] = date_time(r.minute_unix_ns).substr(0, 16);
  j["count"] = r.count;
  j["elapsed_ns"] = r.elapsed_ns;
  return j;
}

}  // namespace txray::show
