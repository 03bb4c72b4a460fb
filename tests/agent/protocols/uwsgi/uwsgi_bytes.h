// uwsgi packets for tests: what nginx's uwsgi_pass writes to uWSGI (`--socket`) and what uWSGI answers.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocols/uwsgi/uwsgi_packet.h"

namespace txray::test::uwsgi_bytes {

using Vars = std::vector<std::pair<std::string, std::string>>;

inline std::string vars_block(const Vars& vars) {
  std::string body;
  for (auto& [k, v] : vars) uwsgi::append_var(body, k, v);
  return body;
}
// A packet: modifier1, datasize (little-endian), modifier2, then the vars.
inline std::string packet(const Vars& vars, uint8_t modifier1 = 0, uint8_t modifier2 = 0) {
  std::string body = vars_block(vars);
  std::string out = {char(modifier1), char(body.size() & 0xff), char(body.size() >> 8), char(modifier2)};
  return out + body;
}
// The vars of nginx's uwsgi_params, in its order, for a request of this method and URI.
inline Vars nginx_vars(std::string_view method, std::string_view uri, size_t content_length = 0,
                       std::string_view traceparent = {}) {
  std::string_view u = uri;
  std::string query, path(u);
  if (size_t q = u.find('?'); q != std::string_view::npos) query = u.substr(q + 1), path = u.substr(0, q);
  Vars v = {{"QUERY_STRING", query},
            {"REQUEST_METHOD", std::string(method)},
            {"CONTENT_TYPE", content_length ? "application/octet-stream" : ""},
            {"CONTENT_LENGTH", content_length ? std::to_string(content_length) : ""},
            {"REQUEST_URI", std::string(uri)},
            {"PATH_INFO", path},
            {"DOCUMENT_ROOT", "/usr/share/nginx/html"},
            {"SERVER_PROTOCOL", "HTTP/1.1"},
            {"REQUEST_SCHEME", "http"},
            {"REMOTE_ADDR", "127.0.0.1"},
            {"REMOTE_PORT", "51234"},
            {"SERVER_PORT", "8080"},
            {"SERVER_NAME", ""},
            {"HTTP_HOST", "example.test"},
            {"HTTP_USER_AGENT", "curl/7.88.1"}};
  if (!traceparent.empty()) v.push_back({"HTTP_TRACEPARENT", std::string(traceparent)});
  return v;
}
inline std::string request(std::string_view method, std::string_view uri, std::string_view body = {},
                           std::string_view traceparent = {}) {
  return packet(nginx_vars(method, uri, body.size(), traceparent)) + std::string(body);
}
// What uWSGI's python plugin writes: the status line and the WSGI headers, then the body (no
// Content-Length unless the application set one).
inline std::string answer(int status, std::string_view body, bool length = true) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: text/plain\r\n";
  if (length) out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return out + "\r\n" + std::string(body);
}

}  // namespace txray::test::uwsgi_bytes
