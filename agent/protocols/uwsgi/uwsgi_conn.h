// Inbound uwsgi over one accepted connection (uWSGI `--socket`, any application server speaking it):
// a transaction per request packet.
//
// HttpConn (http_conn.h) hands the connection over when its first bytes are a uwsgi packet header
// (uwsgi_packet.h: looks_like_packet). The program reads the packet (header and vars), then the request
// body (CONTENT_LENGTH bytes); it writes the application's raw HTTP/1.x response (http_parse.h:
// ResponseTracker follows it).
//   - the end of the vars begins the transaction (kind "http", attribute protocol=uwsgi), the reading
//     thread's request (attribution.h), named "REQUEST_METHOD path" (REQUEST_URI without its query, else
//     SCRIPT_NAME + PATH_INFO), with `query`, `host`, `user_agent` and the caller's trace context from
//     HTTP_TRACEPARENT / HTTP_TRACESTATE / HTTP_BAGGAGE, as FastCGI's (fastcgi_conn.h);
//   - the response's status line is its status (5xx an error); its last byte ends it (Content-Length,
//     chunked), or the connection's end for a response that lasts until close; a close before that is an
//     error;
//   - bytes read / written: the request body and the response.
// A packet that is not modifier1 0, or vars that overrun their datasize, end the following of the
// connection (counted: streams_unparsed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocols/fastcgi/cgi_vars.h"
#include "protocols/http1/http_parse.h"
#include "protocols/uwsgi/uwsgi_packet.h"

namespace txray {

struct Transaction;

class UwsgiServer {
 public:
  void reset(std::string_view client, int fd);
  // False once the connection is given up.
  bool on_read(const char* p, size_t n);
  bool on_write(const char* p, size_t n);
  void on_write_opaque(uint64_t n);
  void on_close();
  void forget() { tx_ = nullptr; }
  Transaction* request(uint64_t txid) const;
  bool busy() const { return tx_ != nullptr; }
  bool dead() const { return dead_; }

 private:
  struct Vars;
  void begin();
  void finish(const char* error);
  void give_up();

  std::string client_;
  int fd_ = -1;
  uwsgi::VarsReader vars_;
  uint64_t body_left_ = 0;
  bool in_body_ = false;
  Transaction* tx_ = nullptr;
  http::ResponseTracker resp_;
  bool dead_ = false;
  CgiVars cgi_;
};

}  // namespace txray
