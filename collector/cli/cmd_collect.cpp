// txray collect [--listen ENDPOINT] [--db FILE] [--curve-secret-key FILE --allowed-clients FILE | --insecure]
//               [--status-interval S] [--max-message-mib M] [--keep-slower-than MS] [--shed-at PCT] [--no-shed]
//               [--redact-pattern REGEX | --no-redact]
//               [--metrics-listen HOST:PORT [--metrics-allow-remote] [--metrics-max-names N]]
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>

#include "collect_service.h"
#include "commands.h"
#include "exporter.h"
#include "redact_options.h"
#include "stage.h"

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
  app.add_option("--listen", opts.listen,
                 "ZeroMQ endpoint to bind, e.g. tcp://127.0.0.1:7878 or ipc:///tmp/txray.sock; an address other "
                 "machines can reach needs --curve-secret-key and --allowed-clients, or --insecure")
      ->capture_default_str();
  app.add_option("--db", opts.db, "SQLite file to write (created when missing, readable by its owner only)")
      ->capture_default_str();
  auto* sk = app.add_option("--curve-secret-key", opts.curve_secret_key_file,
                            "the collector's CURVE secret key file (txray keygen: server.key); agents must then "
                            "authenticate")
                 ->check(CLI::ExistingFile);
  auto* ac = app.add_option("--allowed-clients", opts.allowed_clients_file,
                            "file of the agents' CURVE public keys allowed in, one per line (txray keygen: client.pub)")
                 ->check(CLI::ExistingFile);
  sk->needs(ac);
  ac->needs(sk);
  app.add_flag("--insecure", opts.insecure,
               "listen on a non-loopback address without authentication: anyone who reaches it can write");
  app.add_option("--status-interval", opts.status_interval_s, "seconds between status lines on stderr (0: none)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  otlp::ExporterOptions otlp_opts;
  std::vector<std::string> otlp_headers;
  app.add_option("--otlp-endpoint", otlp_opts.endpoint,
                 "also forward what is received to an OpenTelemetry back-end over OTLP/HTTP, e.g. "
                 "http://127.0.0.1:4318 (spans POSTed to /v1/traces; docs/otlp.md)");
  app.add_option("--otlp-header", otlp_headers, "a header for every OTLP request, KEY=VALUE (repeatable)");
  app.add_option("--otlp-queue", otlp_opts.queue_transactions,
                 "transactions waiting for the OTLP back-end, at most; past it they are dropped and counted")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  metrics::ServerOptions metrics_opts;
  metrics::MetricsLimits metrics_limits;
  metrics_opts.listen.clear();
  app.add_option("--metrics-listen", metrics_opts.listen,
                 "serve Prometheus metrics of what is received on http://HOST:PORT/metrics, e.g. 127.0.0.1:9464 "
                 "(docs/fleet.md)");
  app.add_flag("--metrics-allow-remote", metrics_opts.allow_remote,
               "let --metrics-listen bind an address other machines can reach (the figures name apps and URLs)");
  app.add_option("--metrics-max-names", metrics_limits.max_names,
                 "transaction names with series of their own, all apps together; the rest go to name=\"other\"")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--max-message-mib", max_message_mib, "larger agent messages are counted as oversize and dropped")
      ->check(CLI::Range(0.001, 1024.0))
      ->capture_default_str();
  double keep_slower_ms = 0, shed_at_pct = opts.shed.start_fill * 100;
  int64_t store_delay_us = 0;
  bool no_shed = false;
  app.add_option("--keep-slower-than", keep_slower_ms,
                 "load shedding never sheds a transaction this slow (ms) or slower, besides failed ones and those "
                 "slower than their application's recent p95 (0: the p95 rule only)")
      ->check(CLI::Range(0.0, 86400000.0))
      ->capture_default_str();
  app.add_option("--shed-at", shed_at_pct,
                 "writer-queue fill (%) at which load shedding starts; every fast successful transaction is shed "
                 "from 30 points above it")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  app.add_flag("--no-shed", no_shed,
               "never shed: when the store is behind, the agents wait, then drop and count (as before)");
  RedactArgs redact;
  add_redact_options(app, redact);
  app.add_option("--debug-store-delay-us", store_delay_us,
                 "test/debug only: the writer sleeps this long per transaction stored (a slow store on purpose)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}))
      ->group("");  // hidden from --help
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  opts.limits.max_message_bytes = static_cast<size_t>(max_message_mib * (1 << 20));
  if (!redact_policy(redact, "txray collect", &opts.limits.redact)) return 2;
  if (!opts.limits.redact)
    std::fprintf(stderr, "txray collect: --no-redact: values that look like credentials are stored (and forwarded) "
                         "as the agents send them\n");
  opts.shed.enabled = !no_shed;
  opts.shed.keep_slower_than_ns = static_cast<int64_t>(keep_slower_ms * 1e6);
  opts.shed.start_fill = shed_at_pct / 100;
  opts.shed.full_fill = std::min(1.0, opts.shed.start_fill + 0.3);
  opts.debug_store_delay = std::chrono::microseconds(store_delay_us);

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll returns EINTR and the loop sees the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<otlp::Exporter> exporter;
  if (!otlp_opts.endpoint.empty()) {
    std::string why;
    if (!otlp::header_lines(otlp_headers, otlp_opts.headers, &why) || !otlp::valid_endpoint(otlp_opts.endpoint, &why)) {
      std::fprintf(stderr, "txray collect: %s\n", why.c_str());
      return 2;
    }
    otlp_opts.limits = opts.limits;
    exporter = std::make_unique<otlp::Exporter>(otlp_opts);
    opts.tap = exporter.get();
    std::fprintf(stderr, "txray collect: forwarding to %s (OTLP/HTTP)\n", exporter->url().c_str());
  }
  ingest::CollectStats stats;
  std::unique_ptr<metrics::MetricsStage> metrics_stage;
  if (!metrics_opts.listen.empty()) {
    metrics_stage = std::make_unique<metrics::MetricsStage>(metrics_limits, &stats, opts.tap);
    std::string why;
    if (!metrics_stage->start(metrics_opts, &why)) {
      std::fprintf(stderr, "txray collect: %s\n", why.c_str());
      return 2;
    }
    opts.tap = metrics_stage.get();  // it hands every batch on to the OTLP export, if any
    std::fprintf(stderr, "txray collect: metrics on http://%s/metrics (port %u)\n", metrics_opts.listen.c_str(),
                 metrics_stage->port());
  }
  return ingest::run_collector(opts, g_stop, stats);
}

}  // namespace txray::cli
