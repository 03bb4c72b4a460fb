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

// Frame helpers for the raw-TCP channel (also used by the client): u32 little-endian length + body.
bool read_frame(int fd, std::string& body);  // false on EOF before a frame; throws on a bad frame
bool write_frame(int fd, const std::string& body);
constexpr uint32_t kMaxFrame = 16 * 1024 * 1024;

}  // namespace txray::samples::orders
