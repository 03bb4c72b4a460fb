// txray-relay: the relay page of the GZIP case. GET /page calls the back-end's GET /text over HTTP on a
// fresh connection (so the profile shows SOCKET and SOCKET_CLOSE with the bytes read), decompresses the
// body when it came gzip-encoded, does a little work (wraps it into a page with a word count) and
// compresses its own response when the client accepts gzip.
//
// The relay reports what it measured in response headers (X-Relay-*), and, when the txray agent is
// preloaded, adds a MESSAGE row after each stage, so that each stage's cost is a row of its own.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "gzip.h"
#include "http.h"
#include "service.h"
#include "text.h"
#include "trace.h"

using namespace txray::samples;

namespace {

struct Options {
  std::string listen = "127.0.0.1:0";
  std::string backend;
  std::string inner_gzip = "on";  // ask the back-end for gzip
  std::string outer_gzip = "on";  // compress our own response when the client accepts gzip
  int level = 6;
  bool marks = true;  // --no-marks: no MESSAGE rows of our own (the CPU samples name the stages instead)
};

void handle_page(const Options& o, const std::string& be_host, uint16_t be_port, const HttpRequest& req,
                 HttpResponse& resp) {
  HttpClient backend(be_host, be_port);
  Headers h;
  if (o.inner_gzip == "on") h["Accept-Encoding"] = "gzip";
  // One connection per call and closed afterwards, as the article's service client did.
  HttpResponse be = backend.request("GET", "/text", h, {}, /*keep_alive=*/false);
  if (be.status != 200) {
    resp.status = 502;
    resp.body = "back-end answered " + std::to_string(be.status) + "\n";
    return;
  }

  long long cpu0 = thread_cpu_ns(), t0 = mono_ns();
  std::string text;
  const bool compressed = be.header("content-encoding") == "gzip";
  if (compressed) {
    text = gzip_decompress(be.body);
  } else {
    text = std::move(be.body);
  }
  long long decode_cpu = thread_cpu_ns() - cpu0, decode_wall = mono_ns() - t0;
  if (o.marks)
    trace::mark(compressed ? "gunzip " + std::to_string(be.body.size()) + " -> " + std::to_string(text.size()) + " bytes"
                         : "identity body " + std::to_string(text.size()) + " bytes");

  std::string page = relay::make_page(text);
  if (o.marks) trace::mark("render page " + std::to_string(page.size()) + " bytes");

  long long cpu1 = thread_cpu_ns();
  resp.headers["Content-Type"] = "text/html; charset=utf-8";
  if (o.outer_gzip == "on" && req.header("accept-encoding").find("gzip") != std::string::npos) {
    resp.body = gzip_compress(page, o.level);
    resp.headers["Content-Encoding"] = "gzip";
    if (o.marks)
      trace::mark("gzip response " + std::to_string(page.size()) + " -> " + std::to_string(resp.body.size()) + " bytes");
  } else {
    resp.body = std::move(page);
  }
  resp.headers["X-Relay-Backend-Bytes"] = std::to_string(backend.bytes_read());
  resp.headers["X-Relay-Decompress-Cpu-Ns"] = std::to_string(compressed ? decode_cpu : 0);
  resp.headers["X-Relay-Decompress-Wall-Ns"] = std::to_string(compressed ? decode_wall : 0);
  resp.headers["X-Relay-Compress-Cpu-Ns"] = std::to_string(thread_cpu_ns() - cpu1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"txray-relay: GET /page relays the back-end's GET /text"};
  Options o;
  app.add_option("--listen", o.listen, "host:port to listen on (port 0 = any free port)")->capture_default_str();
  app.add_option("--backend", o.backend, "back-end host:port")->required();
  app.add_option("--inner-gzip", o.inner_gzip, "ask the back-end for a gzip body")->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  app.add_option("--outer-gzip", o.outer_gzip, "gzip our response when the client accepts it")->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  app.add_option("--level", o.level, "gzip level 1..9 of our response")->capture_default_str()->check(CLI::Range(1, 9));
  bool no_marks = false;
  app.add_flag("--no-marks", no_marks, "add no txray_step rows of our own (the agent's CPU samples still name the stages)");
  CLI11_PARSE(app, argc, argv);
  o.marks = !no_marks;

  std::string host, be_host;
  uint16_t port = 0, be_port = 0;
  int lfd;
  try {
    parse_host_port(o.listen, host, port);
    parse_host_port(o.backend, be_host, be_port);
    lfd = listen_tcp(host, port);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-relay: %s\n", e.what());
    return 1;
  }
  HttpServer server(lfd, [&](const HttpRequest& req, HttpResponse& resp) {
    if (req.path == "/health") {
      resp.body = "ok\n";
    } else if (req.method == "GET" && req.path == "/page") {
      handle_page(o, be_host, be_port, req, resp);
    } else {
      resp.status = 404;
      resp.body = "no such resource: " + req.path + "\n";
    }
  });
  announce("txray-relay", "http", local_port(lfd));
  serve_until_signal([&] { server.serve_forever(); });
}
