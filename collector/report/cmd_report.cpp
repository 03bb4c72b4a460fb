// `txray report`: parses the command line into report::Options and writes the report to stdout, a file,
// or (CSV without --table) one file per table into a directory.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "../cli/commands.h"
#include "report.h"
#include "time_arg.h"

namespace txray::cli {

int report_main(int argc, char** argv) {
  report::Options opt;
  std::string since, until, out_path;
  std::string b_since, b_until, b_app, b_name;
  CLI::App app{"Export a slow-call report from a txray store: summary, slowest transactions, transaction "
               "names, SQL by fingerprint, outbound calls, repeated calls (N+1) and a response-time histogram.",
               "txray report"};
  app.add_option("--db", opt.db, "store file written by `txray collect`")->required();
  app.add_option("--since", since, "transactions ending at or after T (unix seconds, ISO 8601, or -15m/-2h/-1d)");
  app.add_option("--until", until, "transactions ending at or before T");
  app.add_option("--app", opt.app, "only this app (exact)");
  app.add_option("--name", opt.name, "only transaction names containing TEXT");
  app.add_option("--min-ms", opt.min_ms, "only transactions at least this slow")->check(CLI::NonNegativeNumber);
  app.add_option("--top", opt.top, "rows per ranked table")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--repeat", opt.repeat_threshold, "N+1: a statement or call target run K or more times in one transaction")
      ->check(CLI::Range(2, 1'000'000))
      ->capture_default_str();
  app.add_option("--format", opt.format, "md | html | csv | json")
      ->check(CLI::IsMember({"md", "html", "csv", "json"}))
      ->capture_default_str();
  std::vector<std::string> tables = report::table_names();
  tables.insert(tables.end(), report::compare_table_names().begin(), report::compare_table_names().end());
  app.add_option("--table", opt.table,
                 "csv: one table (summary, slowest, names, sql, calls, cache, repeated, histogram; with a baseline also "
                 "compare_summary, compare, compare_changes, compare_steps)")
      ->check(CLI::IsMember(tables));
  app.add_option("--baseline-since", b_since, "compare with a baseline: transactions ending at or after T");
  app.add_option("--baseline-until", b_until, "baseline: transactions ending at or before T");
  app.add_option("--baseline-app", b_app, "baseline: this app (exact)");
  app.add_option("--baseline-name", b_name, "baseline: names containing TEXT");
  app.add_option("-o,--output", out_path, "output file (default stdout); for csv without --table, a directory");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  std::string err;
  if (!since.empty() && !(opt.since_unix_ns = report::parse_time_arg(since, now, &err))) {
    std::fprintf(stderr, "txray report: --since: %s\n", err.c_str());
    return 2;
  }
  if (!until.empty() && !(opt.until_unix_ns = report::parse_time_arg(until, now, &err))) {
    std::fprintf(stderr, "txray report: --until: %s\n", err.c_str());
    return 2;
  }
  if (app.count("--baseline-since") || app.count("--baseline-until") || app.count("--baseline-app") ||
      app.count("--baseline-name")) {
    report::Options::Baseline b;
    if (!b_since.empty() && !(b.since_unix_ns = report::parse_time_arg(b_since, now, &err))) {
      std::fprintf(stderr, "txray report: --baseline-since: %s\n", err.c_str());
      return 2;
    }
    if (!b_until.empty() && !(b.until_unix_ns = report::parse_time_arg(b_until, now, &err))) {
      std::fprintf(stderr, "txray report: --baseline-until: %s\n", err.c_str());
      return 2;
    }
    if (app.count("--baseline-app")) b.app = b_app;
    if (app.count("--baseline-name")) b.name = b_name;
    opt.baseline = b;
  }
  if (!opt.table.empty() && opt.format != "csv") {
    std::fprintf(stderr, "txray report: --table applies to --format csv only\n");
    return 2;
  }

  if (opt.format == "csv" && opt.table.empty()) {
    if (out_path.empty()) {
      std::fprintf(stderr, "txray report: csv writes one file per table: give -o DIR, or --table NAME\n");
      return 2;
    }
    err = report::write_report_dir(opt, out_path);
  } else if (out_path.empty() || out_path == "-") {
    err = report::write_report(opt, std::cout);
  } else {
    // Write beside the target and rename, so a failed report never leaves half a file.
    const std::string tmp = out_path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary);
      if (!f) err = "cannot write '" + out_path + "'";
      else err = report::write_report(opt, f);
    }
    std::error_code ec;
    if (err.empty()) {
      std::filesystem::rename(tmp, out_path, ec);
      if (ec) err = "cannot write '" + out_path + "': " + ec.message();
    }
    if (!err.empty()) std::filesystem::remove(tmp, ec);
  }
  if (!err.empty()) {
    std::fprintf(stderr, "txray report: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

}  // namespace txray::cli
