// two_service_front: the front service. GET /order/<id> calls the back-end (GET /price/<id>) over a
// keep-alive connection per front thread and answers a text built from the back-end's reply.
//   two_service_front --port 9101 --backend 9102
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "http.h"
#include "net.h"
#include "service.h"

using namespace txray::samples;

namespace {

// GET /price/<id> on this serving thread's kept-alive back-end connection. A connection the back-end
// closed meanwhile fails once (HttpClient then drops it): reconnect and try again.
// Not inlined: its name is what a stack of a failed call to the back-end shows (tests/e2e/test_stacks.py).
__attribute__((noinline)) HttpResponse call_backend(uint16_t backend, const std::string& id) {
  thread_local HttpClient client("127.0.0.1", backend);
  try {
    return client.request("GET", "/price/" + id);
  } catch (const std::runtime_error&) {
    return client.request("GET", "/price/" + id);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"two_service_front: GET /order/<id> calls the back-end's GET /price/<id>"};
  uint16_t port = 9101, backend = 9102;
  app.add_option("--port", port, "port on 127.0.0.1")->capture_default_str();
  app.add_option("--backend", backend, "the back-end's port on 127.0.0.1")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  try {
    HttpServer server(listen_tcp("127.0.0.1", port), [backend](const HttpRequest& req, HttpResponse& r) {
      r.headers["Content-Type"] = "text/plain";
      if (req.target.rfind("/order/", 0) != 0) {
        r.status = 404;
        r.body = "no such resource\n";
        return;
      }
      std::string id = req.target.substr(7);
      HttpResponse price;
      try {
        price = call_backend(backend, id);
      } catch (const std::exception& e) {
        r.status = 502;
        r.body = std::string("back-end failed: ") + e.what() + "\n";
        return;
      }
      r.body = "order " + id + "\nback-end status " + std::to_string(price.status) + "\nprice " + price.body;
    });
    announce("two_service_front", "http", port);
    serve_until_signal([&] { server.serve_forever(); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "two_service_front: %s\n", e.what());
    return 1;
  }
  return 0;
}
