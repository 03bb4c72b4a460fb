// A tiny HTTP/1.1 server for /metrics on its own thread: one poll() loop over non-blocking sockets, so a
// connection that sends slowly (or never) cannot hold the others; each has a request-size bound and a
// deadline, and at most kMaxConnections are open (past it the oldest is closed). One request per
// connection (Connection: close), as scrapers are happy with.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace txray::metrics {

struct ServerOptions {
  std::string listen = "127.0.0.1:9464";      // IPv4 HOST:PORT (port 0: any free one)
  bool allow_remote = false;                  // a non-loopback address needs this
  std::chrono::milliseconds deadline{5000};   // per connection, from accept to the last byte written
};

// "HOST:PORT" -> address and port; false with a reason when it is not one, or when it is not loopback and
// `allow_remote` is not set.
bool parse_listen(const std::string& s, bool allow_remote, uint32_t* addr_be, uint16_t* port, std::string* why);

class Server {
 public:
  static constexpr size_t kMaxConnections = 32;
  using Render = std::function<std::string(bool openmetrics)>;
  ~Server();
  // Binds and starts the thread; false with a reason when the address cannot be used.
  bool start(const ServerOptions& opts, Render render, std::string* why);
  void stop();
  uint16_t port() const { return port_; }
  uint64_t requests() const { return requests_; }
  uint64_t refused() const { return refused_; }  // bad, oversize, timed out or evicted connections

 private:
  void loop();
  ServerOptions opts_;
  Render render_;
  int listen_fd_ = -1, wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<uint64_t> requests_{0}, refused_{0};
};

}  // namespace txray::metrics
