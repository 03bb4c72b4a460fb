// A client of the order service on one channel, over one kept-alive connection, counting the bytes it
// puts on and takes off the wire (HTTP headers and frame prefixes included).
#pragma once

#include <memory>
#include <string>

#include "channels.h"
#include "http.h"
#include "model.h"
#include "server.h"

namespace txray::samples::orders {

class Client {
 public:
  Client(Channel channel, std::string host, uint16_t tcp_port, uint16_t http_port);
  // Throws std::runtime_error on a transport or decoding failure; service errors come back in
  // Response::code.
  Response call(const Request& req);
  uint64_t bytes_written() const;
  uint64_t bytes_read() const;

 private:
  Channel channel_;
  std::string host_;
  uint16_t tcp_port_;
  Fd tcp_;
  std::unique_ptr<FrameReader> frames_;
  uint64_t tcp_written_ = 0, tcp_read_done_ = 0;  // bytes read on earlier connections
  std::unique_ptr<HttpClient> http_;
};

}  // namespace txray::samples::orders
