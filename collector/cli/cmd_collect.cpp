// txray collect --listen ENDPOINT --db FILE [--status-interval S]
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>

#include "collect_service.h"
#include "commands.h"

namespace txray::cli {

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }
}  // namespace

int collect_main(int argc, char** argv) {
  CLI::App app{"Receive transactions from txray agents over ZeroMQ and store them in an SQLite file.\n"
               "SIGINT/SIGTERM store everything received, then exit 0.",
               "txray collect"};
  ingest::CollectOptions opts;
  double max_message_mib = static_cast<double>(opts.limits.max_message_bytes) / (1 << 20);
  app.add_option("--listen", opts.listen, "ZeroMQ endpoint to bind, e.g. tcp://127.0.0.1:7878 or ipc:///tmp/txray.sock")
      ->required();
  app.add_option("--db", opts.db, "SQLite file to write (created when missing)")->required();
  app.add_option("--status-interval", opts.status_interval_s, "seconds between status lines on stderr (0: none)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--max-message-mib", max_message_mib, "larger agent messages are counted as oversize and dropped")
      ->check(CLI::Range(0.001, 1024.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  opts.limits.max_message_bytes = static_cast<size_t>(max_message_mib * (1 << 20));

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll returns EINTR and the loop sees the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  ingest::CollectStats stats;
  return ingest::run_collector(opts, g_stop, stats);
}

}  // namespace txray::cli
