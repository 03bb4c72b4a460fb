// txray-burner: the C++ sample service of issue 2.
//   txray-burner backend --listen 127.0.0.1:0 --bytes N     raw TCP: sends N bytes to each connection, closes
//   txray-burner serve --listen 127.0.0.1:0 --backend H:P [--burn-ms 50 | --burn-us U] [--workers K]
//        HTTP: each request connects to the back-end, reads everything it sends, closes, then burns
//        --burn-ms of CPU and answers "read <n> bytes, burned <ms> ms". With --workers the server
//        forks K worker processes after it has started (and after the agent, if preloaded, has sent
//        a "startup" transaction); the workers accept on the shared socket.
//        With --backend none the request does no back-end call (a plain keep-alive server: the
//        http_server benchmark uses it).
//   txray-burner fetch --backend H:P     one back-end read, printed (bytes and checksum)
#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "burn.h"
#include "http.h"
#include "net.h"
#include "service.h"
#include "trace.h"

using namespace txray::samples;

namespace {

int run_backend(const std::string& listen, uint64_t bytes) {
  std::string host;
  uint16_t port = 0;
  parse_host_port(listen, host, port);
  int lfd = listen_tcp(host, port);
  const std::string data = burner::payload(bytes);
  announce("txray-burner backend", "tcp", local_port(lfd));
  run_until_signal([&] {
    for (;;) {
      int c = ::accept(lfd, nullptr, nullptr);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      Fd conn(c);
      write_all(conn.get(), data);
    }
  });
  return 0;
}

int run_serve(const std::string& listen, const std::string& backend, long long burn_us, int workers) {
  std::string host, bhost;
  uint16_t port = 0, bport = 0;
  parse_host_port(listen, host, port);
  bool use_backend = backend != "none";
  if (use_backend) parse_host_port(backend, bhost, bport);
  int lfd = listen_tcp(host, port);
  HttpServer server(lfd, [&](const HttpRequest& req, HttpResponse& resp) {
    if (req.path == "/health") {
      resp.body = "ok\n";
      return;
    }
    burner::Fetched f;
    if (use_backend) f = burner::fetch(bhost, bport);
    long long cpu = burn_us > 0 ? burner::burn_cpu_us(burn_us) : 0;
    resp.headers["Content-Type"] = "text/plain";
    resp.body = "read " + std::to_string(f.bytes) + " bytes, burned " + std::to_string(cpu / 1000000) + " ms\n";
  });
  if (workers <= 0) {
    announce("txray-burner", "http", local_port(lfd));
    run_until_signal([&] { server.serve_forever(); });
    return 0;
  }
  // Pre-fork: the parent has been running (and traced) before its workers exist.
  trace::tx_begin("startup");
  trace::tx_end(0);
  std::vector<pid_t> children;
  for (int i = 0; i < workers; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      run_until_signal([&] { server.serve_forever(); });
      std::exit(0);  // exit handlers run: the worker's agent flushes
    }
    if (pid > 0) children.push_back(pid);
  }
  announce("txray-burner", "http", local_port(lfd));
  run_until_signal([] { pause(); });
  for (pid_t c : children) kill(c, SIGTERM);
  for (pid_t c : children) waitpid(c, nullptr, 0);
  return 0;
}

int run_fetch(const std::string& backend) {
  std::string host;
  uint16_t port = 0;
  parse_host_port(backend, host, port);
  burner::Fetched f = burner::fetch(host, port);
  std::printf("read %llu bytes, checksum %016llx\n", (unsigned long long)f.bytes, (unsigned long long)f.checksum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"txray-burner: connect to a back-end, read N bytes, burn CPU (txray's issue 2 sample)"};
  app.require_subcommand(1);
  std::string listen = "127.0.0.1:0", backend;
  uint64_t bytes = 4096;
  int burn_ms = 50, workers = 0;
  long long burn_us = -1;
  auto* be = app.add_subcommand("backend", "raw TCP back-end: sends --bytes to each connection, then closes");
  be->add_option("--listen", listen, "host:port (port 0 = any free port)")->capture_default_str();
  be->add_option("--bytes", bytes, "bytes sent per connection")->capture_default_str()->check(CLI::Range(0, 1 << 30));
  auto* sv = app.add_subcommand("serve", "HTTP service: per request, read the back-end, then burn CPU");
  sv->add_option("--listen", listen, "host:port (port 0 = any free port)")->capture_default_str();
  sv->add_option("--backend", backend, "host:port of the back-end, or 'none'")->required();
  sv->add_option("--burn-ms", burn_ms, "CPU milliseconds burned per request")->capture_default_str()->check(CLI::Range(0, 60000));
  sv->add_option("--burn-us", burn_us, "CPU microseconds burned per request (instead of --burn-ms)")
      ->check(CLI::Range(0LL, 60000000LL));
  sv->add_option("--workers", workers, "fork this many worker processes (0: serve in this process)")
      ->capture_default_str()->check(CLI::Range(0, 64));
  auto* fe = app.add_subcommand("fetch", "read the back-end once and print what came");
  fe->add_option("--backend", backend, "host:port of the back-end")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (*be) return run_backend(listen, bytes);
    if (*sv) return run_serve(listen, backend, burn_us >= 0 ? burn_us : burn_ms * 1000LL, workers);
    return run_fetch(backend);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-burner: %s\n", e.what());
    return 1;
  }
}
