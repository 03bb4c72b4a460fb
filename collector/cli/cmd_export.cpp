// txray export --db FILE --otlp-endpoint URL [--since T] [--until T] [--app NAME] [--otlp-header K=V]...
//              [--give-up-after S] [--redact-pattern REGEX | --no-redact]
// Sends a stored range to an OpenTelemetry back-end over OTLP/HTTP: the same spans (and ids) as
// `txray collect --otlp-endpoint` forwards live (docs/otlp.md).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>

#include "commands.h"
#include "exporter.h"
#include "reader.h"
#include "redact_options.h"
#include "store.h"
#include "store_source.h"
#include "time_arg.h"

namespace txray::cli {

int export_main(int argc, char** argv) {
  CLI::App app{"Send stored transactions to an OpenTelemetry back-end as OTLP/HTTP spans (docs/otlp.md).\n"
               "Exit status 0 when the back-end took every one, 1 when some were refused or undeliverable.",
               "txray export"};
  std::string db_path, since, until, app_name;
  std::vector<std::string> headers;
  otlp::ExporterOptions opts;
  app.add_option("--db", db_path, "the txray store to read")->required()->check(CLI::ExistingFile);
  app.add_option("--otlp-endpoint", opts.endpoint, "the back-end's OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318")
      ->required();
  app.add_option("--otlp-header", headers, "a header for every request, KEY=VALUE (repeatable)");
  app.add_option("--since", since, "transactions ending at or after T (unix seconds, ISO 8601, or -15m/-2h/-1d)");
  app.add_option("--until", until, "transactions ending at or before T");
  app.add_option("--app", app_name, "only this application");
  int64_t give_up_s = opts.max_retry.count();
  app.add_option("--give-up-after", give_up_s,
                 "seconds a request refused by the back-end (429/5xx, no answer) is retried before it counts as failed")
      ->check(CLI::Range(int64_t{0}, int64_t{86400}))
      ->capture_default_str();
  // A store written by an older collector, or with --no-redact, may hold values a current one masks:
  // the exporter decodes every batch it sends with these options, as the collector does.
  RedactArgs redact;
  add_redact_options(app, redact);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (!redact_policy(redact, "txray export", &opts.limits.redact)) return 2;
  opts.max_retry = std::chrono::seconds(give_up_s);
  std::string why;
  if (!otlp::header_lines(headers, opts.headers, &why) || !otlp::valid_endpoint(opts.endpoint, &why)) {
    std::fprintf(stderr, "txray export: %s\n", why.c_str());
    return 2;
  }
  otlp::StoreSelection sel;
  sel.app = app_name;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string err;
  if (!since.empty() && !(sel.since_ns = report::parse_time_arg(since, now, &err))) {
    std::fprintf(stderr, "txray export: --since: %s\n", err.c_str());
    return 2;
  }
  if (!until.empty() && !(sel.until_ns = report::parse_time_arg(until, now, &err))) {
    std::fprintf(stderr, "txray export: --until: %s\n", err.c_str());
    return 2;
  }
  Db db;
  try {
    db = open_store(db_path, OpenMode::kReadOnly);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray export: %s\n", e.what());
    return 2;
  }

  // A back-end that is away is waited for (with back-off) for max_retry per request; the queue only
  // bounds memory here: export waits for room rather than dropping.
  otlp::Exporter exporter(opts);
  auto started = std::chrono::steady_clock::now();
  uint64_t selected = 0;
  try {
    for (auto& b : otlp::db_connect_batches(db, sel)) exporter.push_wait(b.SerializeAsString(), 0);
    Reader reader(db);
    std::map<int64_t, v1::Batch> open;  // per agent (agents.id): the batch being filled
    auto flush = [&](v1::Batch& b) {
      if (b.transactions_size() == 0) return;
      uint64_t n = static_cast<uint64_t>(b.transactions_size());
      exporter.push_wait(b.SerializeAsString(), n);
      b.clear_transactions();
    };
    for (int64_t id : otlp::select_transactions(db, sel)) {
      auto t = reader.load(id);
      if (!t) continue;
      ++selected;
      v1::Batch& b = open[t->agent.id];
      if (!b.has_agent()) *b.mutable_agent() = otlp::to_wire(t->agent);
      *b.add_transactions() = otlp::to_wire(*t);
      if (b.transactions_size() >= 256) flush(b);
    }
    for (auto& [_, b] : open) flush(b);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray export: reading %s: %s\n", db_path.c_str(), e.what());
    exporter.finish(std::chrono::milliseconds(0));
    return 2;
  }
  // Every request gets its retries (max_retry each), and no more.
  exporter.finish(std::chrono::seconds(opts.max_retry) + std::chrono::seconds(30));
  const auto& s = exporter.stats();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr,
               "txray export: %llu transactions selected, %llu sent (%llu spans) to %s in %.1f s; failed %llu, "
               "dropped %llu, rejected spans %llu\n",
               static_cast<unsigned long long>(selected), static_cast<unsigned long long>(s.sent_tx.load()),
               static_cast<unsigned long long>(s.sent_spans.load()), exporter.url().c_str(), secs,
               static_cast<unsigned long long>(s.failed_tx.load()), static_cast<unsigned long long>(s.dropped_tx.load()),
               static_cast<unsigned long long>(s.rejected_spans.load()));
  return s.sent_tx.load() == selected && s.rejected_spans.load() == 0 ? 0 : 1;
}

}  // namespace txray::cli
