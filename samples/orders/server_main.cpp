// txray-orders: the order service of ../shared/reference/000_* over raw TCP (binary) and HTTP (binary,
// JSON, SOAP/XML), on a SQLite database of 100,000 customers generated on first start.
#include <CLI/CLI.hpp>

#include <sys/socket.h>

#include <cstdio>
#include <thread>

#include "dataset.h"
#include "repository_mariadb.h"
#include "repository_pg.h"
#include "server.h"
#include "service.h"

using namespace txray::samples;
using namespace txray::samples::orders;

int main(int argc, char** argv) {
  CLI::App app{"txray-orders: GetOrderStatus / GetCustomers over raw TCP and HTTP"};
  std::string db = "orders.db", tcp = "127.0.0.1:0", http = "127.0.0.1:0";
  std::string pg, mariadb;
  bool no_pool = false, generate_only = false;
  app.add_option("--db", db, "database file (generated when missing)")->capture_default_str();
  app.add_option("--tcp", tcp, "host:port of the raw-TCP binary channel")->capture_default_str();
  app.add_option("--http", http, "host:port of the HTTP channels (/bin, /json, /soap)")->capture_default_str();
  app.add_option("--pg", pg, "PostgreSQL connection string: serve from PostgreSQL instead of the SQLite file "
                 "(the tables are loaded on first start)");
  app.add_option("--mariadb", mariadb, "MariaDB/MySQL URL mysql://user@host:port/db: serve from MariaDB instead of "
                 "the SQLite file (the tables are loaded on first start)");
  app.add_flag("--no-pool", no_pool, "open a new database connection for every request");
  // The demo generates the file untraced first: 400,000 INSERTs made outside any request would otherwise
  // be stored as the agent's unattributed steps and lead its first report.
  app.add_flag("--generate-only", generate_only, "generate the --db file when missing, then exit");
  CLI11_PARSE(app, argc, argv);

  int tcp_fd, http_fd;
  try {
    if (!mariadb.empty()) {
      if (ensure_mariadb_database(mariadb)) std::printf("txray-orders: loaded the tables into MariaDB\n");
    } else if (!pg.empty()) {
      if (ensure_pg_database(pg)) std::printf("txray-orders: loaded the tables into PostgreSQL\n");
    } else if (ensure_database(db)) {
      std::printf("txray-orders: generated %s\n", db.c_str());
    }
    if (generate_only) return 0;
    std::string h;
    uint16_t p;
    parse_host_port(tcp, h, p);
    tcp_fd = listen_tcp(h, p);
    parse_host_port(http, h, p);
    http_fd = listen_tcp(h, p);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-orders: %s\n", e.what());
    return 1;
  }
  Repository repo(db, !no_pool, pg, mariadb);
  HttpServer server(http_fd, [&repo](const HttpRequest& req, HttpResponse& resp) { handle_http(repo, req, resp); });
  announce("txray-orders", "tcp", local_port(tcp_fd));
  announce("txray-orders", "http", local_port(http_fd));
  serve_until_signal([&] {
    std::thread([&] { serve_tcp_binary(tcp_fd, repo); }).detach();
    server.serve_forever();
  });
}
