// FastCGI records for tests: what nginx writes to php-fpm and what php-fpm answers.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocols/fastcgi/fastcgi_records.h"

namespace txray::test::fcgi_bytes {

inline std::string record(uint8_t type, uint16_t id, std::string_view content, uint8_t padding = 0) {
  std::string out(8, '\0');
  fcgi::put_header(out.data(), type, id, uint16_t(content.size()), padding);
  out.append(content);
  out.append(padding, '\0');
  return out;
}
inline std::string begin(uint16_t id, bool keep_conn = false) {
  std::string body = {0, 1, char(keep_conn ? 1 : 0), 0, 0, 0, 0, 0};
  return record(fcgi::kBeginRequest, id, body);
}
using Pairs = std::vector<std::pair<std::string, std::string>>;
// PARAMS records (content padded to 8 as nginx does) and the empty one that ends them.
inline std::string params(uint16_t id, const Pairs& pairs) {
  std::string body;
  for (auto& [k, v] : pairs) fcgi::append_pair(body, k, v);
  std::string out = record(fcgi::kParams, id, body, uint8_t((8 - body.size() % 8) % 8));
  return out + record(fcgi::kParams, id, "");
}
inline std::string stdin_(uint16_t id, std::string_view data) {
  std::string out;
  if (!data.empty()) out = record(fcgi::kStdin, id, data);
  return out + record(fcgi::kStdin, id, "");
}
inline std::string stdout_(uint16_t id, std::string_view data) { return record(fcgi::kStdout, id, data); }
inline std::string end(uint16_t id, uint8_t protocol_status = 0) {
  std::string body = {0, 0, 0, 0, char(protocol_status), 0, 0, 0};
  return record(fcgi::kEndRequest, id, body) ;
}
inline Pairs nginx_params(std::string_view method, std::string_view uri, std::string_view traceparent = {}) {
  Pairs p = {{"QUERY_STRING", ""},
             {"REQUEST_METHOD", std::string(method)},
             {"CONTENT_TYPE", ""},
             {"CONTENT_LENGTH", ""},
             {"SCRIPT_NAME", "/index.php"},
             {"REQUEST_URI", std::string(uri)},
             {"DOCUMENT_URI", "/index.php"},
             {"SERVER_PROTOCOL", "HTTP/1.1"},
             {"REMOTE_ADDR", "127.0.0.1"},
             {"HTTP_HOST", "example.test"},
             {"HTTP_USER_AGENT", "curl/7.88.1"}};
  if (!traceparent.empty()) p.push_back({"HTTP_TRACEPARENT", std::string(traceparent)});
  return p;
}

}  // namespace txray::test::fcgi_bytes
