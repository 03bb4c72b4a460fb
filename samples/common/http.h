// A deliberately small HTTP/1.1 for the samples: blocking sockets, one thread per connection,
// Content-Length bodies only (no chunked encoding), keep-alive. Requests and responses are written with
// plain write() and read with plain read(), so the agent sees ordinary HTTP on ordinary sockets.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "net.h"

namespace txray::samples {

using Headers = std::map<std::string, std::string>;  // names lower-cased

struct HttpRequest {
  std::string method;
  std::string target;  // as sent: path?query
  std::string path;
  std::string query;   // without '?'
  Headers headers;
  std::string body;
  std::string header(const std::string& lower_name) const;
  // Value of `name` in the query string ("" when absent). No percent-decoding: the samples send plain
  // numbers and words.
  std::string query_param(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  Headers headers;   // Content-Length and Connection are set by the writer
  std::string body;
  std::string header(const std::string& lower_name) const;
};

// Reads HTTP messages from a connected socket through its own buffer.
class HttpReader {
 public:
  explicit HttpReader(int fd) : fd_(fd) {}
  // False on a clean EOF before the first byte; throws std::runtime_error on malformed input or EOF in
  // the middle of a message.
  bool read_request(HttpRequest& req);
  void read_response(HttpResponse& resp);
  // Bytes read from the socket so far (the wire bytes, headers included).
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  bool fill();                                  // one read(); false on EOF
  bool read_head(std::string& head);            // up to and including the blank line
  void read_body(const Headers& h, std::string& body);
  int fd_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t bytes_read_ = 0;
};

// Parses one complete request from the front of `data` (for servers that read on their own, e.g. from
// non-blocking sockets). Returns the bytes it took (head and body), or 0 when `data` does not hold a
// whole request yet; throws std::runtime_error on malformed input.
size_t parse_request(std::string_view data, HttpRequest& req);

std::string format_request(const std::string& method, const std::string& target, const std::string& host,
                           const Headers& headers, std::string_view body);
std::string format_response(const HttpResponse& resp, bool keep_alive);
const char* reason_phrase(int status);

// One keep-alive (or one-shot) client connection.
class HttpClient {
 public:
  HttpClient(std::string host, uint16_t port) : host_(std::move(host)), port_(port) {}
  // Sends one request and reads its response; connects first when not connected. With keep_alive
  // false the connection is closed after the response (a fresh socket per call).
  HttpResponse request(const std::string& method, const std::string& target, const Headers& headers = {},
                       std::string_view body = {}, bool keep_alive = true);
  void close() { fd_.reset(); reader_ = HttpReader(-1); }
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t bytes_read() const { return bytes_read_total_ + reader_.bytes_read(); }

 private:
  std::string host_;
  uint16_t port_;
  Fd fd_;
  HttpReader reader_{-1};
  uint64_t bytes_written_ = 0;
  uint64_t bytes_read_total_ = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

// Accepts connections on a listening socket and serves each one on its own detached thread. A handler
// that throws produces a 500 with the message as body; malformed requests get a 400.
class HttpServer {
 public:
  HttpServer(int listen_fd, HttpHandler handler) : listen_fd_(listen_fd), handler_(std::move(handler)) {}
  void serve_forever();  // returns when the listening socket is shut down
 private:
  void serve_connection(int fd);
  int listen_fd_;
  HttpHandler handler_;
};

}  // namespace txray::samples
