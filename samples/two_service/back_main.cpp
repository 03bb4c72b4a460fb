// two_service_back: the back-end. GET /price/<id> answers a small JSON document computed from the id
// (deterministic, so the front's answers can be compared byte for byte with and without the agent).
//   two_service_back --port 9102
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "http.h"
#include "net.h"
#include "service.h"

using namespace txray::samples;

int main(int argc, char** argv) {
  CLI::App app{"two_service_back: GET /price/<id> answers a small JSON document"};
  uint16_t port = 9102;
  app.add_option("--port", port, "port on 127.0.0.1")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  try {
    HttpServer server(listen_tcp("127.0.0.1", port), [](const HttpRequest& req, HttpResponse& r) {
      if (req.target.rfind("/price/", 0) != 0) {
        r.status = 404;
        r.headers["Content-Type"] = "text/plain";
        r.body = "no such resource\n";
        return;
      }
      unsigned long id = std::strtoul(req.target.c_str() + 7, nullptr, 10);
      // A little work per call, as a real lookup would do.
      unsigned long h = id * 2654435761ul;
      for (int i = 0; i < 20000; ++i) h = h * 6364136223846793005ul + 1442695040888963407ul;
      char body[160];
      std::snprintf(body, sizeof body, "{\"id\":%lu,\"price_cents\":%lu,\"currency\":\"EUR\",\"check\":\"%08lx\"}\n",
                    id, 100 + id * 37 % 9900, h & 0xffffffff);
      r.headers["Content-Type"] = "application/json";
      r.body = body;
    });
    announce("two_service_back", "http", port);
    serve_until_signal([&] { server.serve_forever(); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "two_service_back: %s\n", e.what());
    return 1;
  }
  return 0;
}
