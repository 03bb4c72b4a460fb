// txray-threadpool: a thread-pool HTTP server calling a back-end (issue 10's C/C++ hand-off sample).
//   txray-threadpool serve --listen 127.0.0.1:0 --backend H:P [--workers 8]
//        GET /r/<id>: a worker calls the back-end's GET /b/<id> (a keep-alive connection per worker)
//        and answers "r <id>" followed by the back-end's answer. One I/O thread reads every request;
//        the workers carry the request's txray context (samples/threadpool/pool_server.h).
//   txray-threadpool backend --listen 127.0.0.1:0
//        GET /b/<id> answers "b <id>" (one thread per connection).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "http.h"
#include "net.h"
#include "pool_server.h"
#include "service.h"

using namespace txray::samples;

namespace {

// GET /b/<id> on this worker's kept-alive back-end connection. A connection the back-end closed
// meanwhile fails once (HttpClient then drops it): reconnect and try again.
HttpResponse call_backend(const std::string& host, uint16_t port, const std::string& id) {
  thread_local HttpClient client(host, port);
  try {
    return client.request("GET", "/b/" + id);
  } catch (const std::runtime_error&) {
    return client.request("GET", "/b/" + id);
  }
}

int run_serve(const std::string& listen, const std::string& backend, int workers) {
  std::string host, bhost;
  uint16_t port = 0, bport = 0;
  parse_host_port(listen, host, port);
  parse_host_port(backend, bhost, bport);
  int lfd = listen_tcp(host, port, 1024);
  threadpool::PoolServer server(lfd, workers, [&](const HttpRequest& req, HttpResponse& r) {
    r.headers["Content-Type"] = "text/plain";
    if (req.path == "/health") {
      r.body = "ok\n";
      return;
    }
    if (req.path.rfind("/r/", 0) != 0) {
      r.status = 404;
      r.body = "no such resource\n";
      return;
    }
    std::string id = req.path.substr(3);
    HttpResponse b;
    try {
      b = call_backend(bhost, bport, id);
    } catch (const std::exception& e) {
      r.status = 502;
      r.body = std::string("back-end failed: ") + e.what() + "\n";
      return;
    }
    r.status = b.status == 200 ? 200 : 502;
    r.body = "r " + id + "\n" + b.body;
  });
  announce("txray-threadpool", "http", local_port(lfd));
  serve_until_signal([&] { server.serve_forever(); });
}

int run_backend(const std::string& listen) {
  std::string host;
  uint16_t port = 0;
  parse_host_port(listen, host, port);
  int lfd = listen_tcp(host, port, 1024);
  HttpServer server(lfd, [](const HttpRequest& req, HttpResponse& r) {
    r.headers["Content-Type"] = "text/plain";
    if (req.path.rfind("/b/", 0) != 0) {
      r.status = 404;
      r.body = "no such resource\n";
      return;
    }
    r.body = "b " + req.path.substr(3) + "\n";
  });
  announce("txray-threadpool backend", "http", local_port(lfd));
  serve_until_signal([&] { server.serve_forever(); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"txray-threadpool: a thread-pool HTTP server that calls a back-end (txray's issue 10 sample)"};
  app.require_subcommand(1);
  std::string listen = "127.0.0.1:0", backend;
  int workers = 8;
  auto* sv = app.add_subcommand("serve", "GET /r/<id>: a pool worker calls the back-end's GET /b/<id>");
  sv->add_option("--listen", listen, "host:port (port 0 = any free port)")->capture_default_str();
  sv->add_option("--backend", backend, "host:port of the back-end")->required();
  sv->add_option("--workers", workers, "worker threads")->capture_default_str()->check(CLI::Range(1, 256));
  auto* be = app.add_subcommand("backend", "GET /b/<id> answers \"b <id>\"");
  be->add_option("--listen", listen, "host:port (port 0 = any free port)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    if (*sv) return run_serve(listen, backend, workers);
    return run_backend(listen);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-threadpool: %s\n", e.what());
    return 1;
  }
}
