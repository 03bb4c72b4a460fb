// One OTLP/HTTP connection (libcurl, kept alive between requests): POSTs a protobuf body, gzip-encoded,
// and reports what the back-end answered. Used on the exporter's own thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

struct curl_slist;

namespace txray::otlp {

struct PostResult {
  long http_status = 0;      // 0: no HTTP answer (connection refused, timeout…): see error
  std::string error;         // curl's message when http_status is 0
  double retry_after_s = -1; // the Retry-After header (seconds, or an HTTP date turned into seconds), -1 when absent
  std::string body;          // the answer (an ExportTraceServiceResponse on success, a google.rpc.Status on error)
};

class HttpSender {
 public:
  // url: the full traces URL (http://HOST:4318/v1/traces); headers: "Name: value" lines added to each request.
  // abort (may be null): when it becomes true, a request in flight is cut short.
  HttpSender(std::string url, std::vector<std::string> headers, long timeout_ms, const std::atomic<bool>* abort);
  ~HttpSender();
  HttpSender(const HttpSender&) = delete;
  HttpSender& operator=(const HttpSender&) = delete;

  PostResult post(const std::string& body, bool gzipped);

 private:
  std::string url_;
  void* curl_ = nullptr;
  struct curl_slist* headers_ = nullptr;
  struct curl_slist* headers_gzip_ = nullptr;
  long timeout_ms_;
  const std::atomic<bool>* abort_;
};

// gzip (RFC 1952) of `in` at zlib's fastest level.
std::string gzip(const std::string& in);

// Parses a Retry-After value: delay seconds, or an HTTP date (then seconds from now_unix_s). -1 when invalid.
double parse_retry_after(const std::string& value, int64_t now_unix_s);

// The URL traces are posted to: an endpoint given as http://HOST:PORT (or with a trailing /) gets the
// OTLP/HTTP path /v1/traces; one with any other path is used as it is.
std::string traces_url(const std::string& endpoint);

}  // namespace txray::otlp
