#include "http_request.h"

#include <cctype>

namespace txray::metrics {

namespace {
bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}
bool token_char(char c) { return c > 0x20 && c < 0x7f; }
}  // namespace

HttpRequest parse_request(std::string_view in) {
  HttpRequest r;
  size_t end = in.find("\r\n\r\n");
  size_t len = end == std::string_view::npos ? in.size() : end + 4;
  if (len > kMaxRequestBytes) {
    r.status = ParseStatus::kTooLarge;
    return r;
  }
  if (end == std::string_view::npos) {
    // A request line that is already wrong need not wait for the rest.
    for (char c : in.substr(0, in.find(' ')))
      if (!std::isupper(static_cast<unsigned char>(c))) {
        r.status = ParseStatus::kBad;
        return r;
      }
    return r;
  }
  std::string_view head = in.substr(0, end + 2);
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string_view::npos || sp2 == sp1 + 1) {
    r.status = ParseStatus::kBad;
    return r;
  }
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = line.substr(sp2 + 1);
  for (char c : method)
    if (!std::isupper(static_cast<unsigned char>(c))) r.status = ParseStatus::kBad;
  for (char c : target)
    if (!token_char(c)) r.status = ParseStatus::kBad;
  if (target.empty() || target[0] != '/' || (version != "HTTP/1.1" && version != "HTTP/1.0")) r.status = ParseStatus::kBad;
  if (r.status == ParseStatus::kBad) return r;
  r.method = std::string(method);
  r.path = std::string(target.substr(0, target.find('?')));
  // Headers: only Accept matters; each must be NAME: VALUE.
  size_t pos = eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    std::string_view h = head.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = h.find(':');
    if (colon == 0 || colon == std::string_view::npos) {
      r.status = ParseStatus::kBad;
      return r;
    }
    for (char c : h.substr(0, colon))
      if (!token_char(c)) {
        r.status = ParseStatus::kBad;
        return r;
      }
    if (iequals_prefix(h, "accept:") && h.find("application/openmetrics-text") != std::string_view::npos)
      r.openmetrics = true;
  }
  r.status = ParseStatus::kOk;
  return r;
}

std::string response(int code, const char* reason, const char* content_type, const std::string& body, bool head) {
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!head) out += body;
  return out;
}

}  // namespace txray::metrics
