// txray-relay-backend: the back-end of the GZIP case. GET /text answers with a fixed document, gzip-
// compressed on every request when the caller sends "Accept-Encoding: gzip" (as a web server's dynamic
// compression does), so each call costs real compression CPU here.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "gzip.h"
#include "http.h"
#include "service.h"
#include "text.h"

using namespace txray::samples;

int main(int argc, char** argv) {
  CLI::App app{"txray-relay-backend: serves GET /text, gzip-compressed when asked"};
  std::string listen = "127.0.0.1:0";
  size_t text_kb = 8192;
  int level = 6;
  std::string gzip = "on";
  app.add_option("--listen", listen, "host:port to listen on (port 0 = any free port)")->capture_default_str();
  app.add_option("--text-kb", text_kb, "size of the document in KiB")->capture_default_str()->check(CLI::Range(1, 262144));
  app.add_option("--level", level, "gzip level 1..9")->capture_default_str()->check(CLI::Range(1, 9));
  app.add_option("--gzip", gzip, "compress when the caller accepts gzip")->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  CLI11_PARSE(app, argc, argv);

  const std::string text = relay::make_text(text_kb * 1024);
  std::string host;
  uint16_t port = 0;
  int lfd;
  try {
    parse_host_port(listen, host, port);
    lfd = listen_tcp(host, port);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-relay-backend: %s\n", e.what());
    return 1;
  }

  HttpServer server(lfd, [&](const HttpRequest& req, HttpResponse& resp) {
    if (req.path == "/health") {
      resp.body = "ok\n";
      return;
    }
    if (req.method != "GET" || req.path != "/text") {
      resp.status = 404;
      resp.body = "no such resource: " + req.path + "\n";
      return;
    }
    resp.headers["Content-Type"] = "text/plain; charset=utf-8";
    resp.headers["X-Text-Bytes"] = std::to_string(text.size());
    if (gzip == "on" && req.header("accept-encoding").find("gzip") != std::string::npos) {
      resp.headers["Content-Encoding"] = "gzip";
      resp.body = gzip_compress(text, level);
    } else {
      resp.body = text;
    }
  });
  announce("txray-relay-backend", "http", local_port(lfd));
  serve_until_signal([&] { server.serve_forever(); });
}
