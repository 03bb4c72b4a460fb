// The order service's two front doors: the raw-TCP binary server and the HTTP handler (binary, JSON and
// SOAP bodies). Both decode a Request, run it on the Repository, and encode the Response.
#pragma once

#include "http.h"
#include "repository.h"

namespace txray::samples::orders {

// Serves framed binary calls on an accepted-connection-per-thread basis until the listening socket is
// shut down. Each call is one txray transaction ("TCP <Method>") through the agent's C API when the
// agent is present; an HTTP server needs no such help, the agent recognises HTTP requests by itself.
void serve_tcp_binary(int listen_fd, const Repository& repo);

// Handles POST /bin|/json|/soap/<Method> and GET /health.
void handle_http(const Repository& repo, const HttpRequest& req, HttpResponse& resp);

// Frames of the raw-TCP channel (also used by the client): u32 little-endian length + body.
constexpr uint32_t kMaxFrame = 16 * 1024 * 1024;
bool write_frame(int fd, const std::string& body);  // one write() for prefix and body

// Reads frames through a buffer: one read() usually brings a whole frame (as HttpReader does for HTTP),
// so the binary channel makes no more system calls per message than the HTTP channels.
class FrameReader {
 public:
  explicit FrameReader(int fd) : fd_(fd) {}
  // False on EOF before a frame; throws std::runtime_error on a bad length or EOF inside a frame.
  bool read(std::string& body);
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  bool fill();
  int fd_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace txray::samples::orders
