// The metrics endpoint's request parser: bytes in, a verdict out, nothing kept. Pure, so that a fuzz
// target drives it with any bytes (tests/collector/fuzz_metrics_http.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace txray::metrics {

inline constexpr size_t kMaxRequestBytes = 8192;  // request line + headers; a scraper sends a few hundred

enum class ParseStatus { kIncomplete, kOk, kBad, kTooLarge };

struct HttpRequest {
  ParseStatus status = ParseStatus::kIncomplete;
  std::string method, path;     // path without its query string
  bool openmetrics = false;     // the Accept header asks for application/openmetrics-text
};

HttpRequest parse_request(std::string_view bytes);

// The whole response to a parsed request: status line, headers (Connection: close) and body. `body` is
// called only for GET/HEAD /metrics and gets whether OpenMetrics was asked for.
template <class Body>
std::string respond(const HttpRequest& r, Body&& body);

std::string response(int code, const char* reason, const char* content_type, const std::string& body, bool head);

template <class Body>
std::string respond(const HttpRequest& r, Body&& body) {
  if (r.status == ParseStatus::kTooLarge) return response(431, "Request Header Fields Too Large", "text/plain", "too large\n", false);
  if (r.status != ParseStatus::kOk) return response(400, "Bad Request", "text/plain", "bad request\n", false);
  bool head = r.method == "HEAD";
  if (r.method != "GET" && !head) return response(405, "Method Not Allowed", "text/plain", "GET /metrics\n", false);
  if (r.path == "/")
    return response(200, "OK", "text/html; charset=utf-8", "<a href=\"/metrics\">/metrics</a>\n", head);
  if (r.path != "/metrics") return response(404, "Not Found", "text/plain", "GET /metrics\n", head);
  return response(200, "OK",
                  r.openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                : "text/plain; version=0.0.4; charset=utf-8",
                  body(r.openmetrics), head);
}

}  // namespace txray::metrics
