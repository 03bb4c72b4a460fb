#include "report.h"

#include <filesystem>
#include <fstream>

#include "compute.h"
#include "render.h"

namespace txray::report {

const std::vector<std::string>& table_names() {
  static const std::vector<std::string> names{"summary", "slowest", "names", "sql", "calls", "cache",
                                              "repeated", "histogram"};
  return names;
}

const std::vector<std::string>& compare_table_names() {
  static const std::vector<std::string> names{"compare_summary", "compare", "compare_changes", "compare_steps"};
  return names;
}

bool is_table_name(const std::string& name) {
  for (const auto* list : {&table_names(), &compare_table_names()})
    for (const auto& n : *list)
      if (n == name) return true;
  return false;
}

std::string write_report(const Options& opt, std::ostream& out) {
  if (opt.format == "csv" && opt.table.empty())
    return "csv writes one table per file: choose one with --table, or give a directory";
  Report r;
  if (auto err = compute_report(opt, r); !err.empty()) return err;
  if (opt.format == "md") render_md(r, out);
  else if (opt.format == "html") render_html(r, out);
  else if (opt.format == "json") render_json(r, out);
  else render_csv(csv_table(r, opt.table), out);
  out.flush();
  if (!out) return "write failed";
  return "";
}

std::string write_report_dir(const Options& opt, const std::string& dir) {
  if (opt.format != "csv") return "a directory of files is written for --format csv only";
  Report r;
  if (auto err = compute_report(opt, r); !err.empty()) return err;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return "cannot create directory '" + dir + "': " + ec.message();
  std::vector<std::string> names = table_names();
  if (r.has_compare)  // only a comparison has these
    names.insert(names.end(), compare_table_names().begin(), compare_table_names().end());
  for (const auto& name : names) {
    if (!opt.table.empty() && name != opt.table) continue;
    const std::string path = (std::filesystem::path(dir) / (name + ".csv")).string();
    std::ofstream f(path, std::ios::binary);
    if (!f) return "cannot write '" + path + "'";
    render_csv(csv_table(r, name), f);
    f.flush();
    if (!f) return "write failed: '" + path + "'";
  }
  return "";
}

}  // namespace txray::report
