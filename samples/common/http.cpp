#include "http.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cctype>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <thread>

namespace txray::samples {

namespace {

constexpr size_t kMaxHead = 64 * 1024;
constexpr size_t kMaxBody = 512ull * 1024 * 1024;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

// Splits the head into its first line and its headers.
std::string parse_head(const std::string& head, Headers& headers) {
  size_t eol = head.find("\r\n");
  std::string first = head.substr(0, eol);
  size_t pos = eol + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string::npos || end == pos) break;
    std::string_view line(head.data() + pos, end - pos);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) throw std::runtime_error("malformed header line");
    headers[lower(std::string(line.substr(0, colon)))] = trim(line.substr(colon + 1));
    pos = end + 2;
  }
  return first;
}

std::string find_header(const Headers& h, const std::string& name) {
  auto it = h.find(name);
  return it == h.end() ? std::string() : it->second;
}

// The request line into method/target/path/query, the headers into req.headers.
void parse_request_head(const std::string& head, HttpRequest& req) {
  req.headers.clear();
  std::string line = parse_head(head, req.headers);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 == sp1 || line.compare(sp2 + 1, 5, "HTTP/") != 0)
    throw std::runtime_error("malformed request line");
  req.method = line.substr(0, sp1);
  req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t q = req.target.find('?');
  req.path = req.target.substr(0, q);
  req.query = q == std::string::npos ? "" : req.target.substr(q + 1);
}

// The body's length from Content-Length (0 without one); chunked bodies are not supported.
uint64_t body_length(const Headers& h) {
  if (!find_header(h, "transfer-encoding").empty())
    throw std::runtime_error("transfer-encoding is not supported by the samples");
  std::string cl = find_header(h, "content-length");
  if (cl.empty()) return 0;
  char* end = nullptr;
  unsigned long long n = std::strtoull(cl.c_str(), &end, 10);
  if (*end != '\0' || n > kMaxBody) throw std::runtime_error("bad content-length: " + cl);
  return n;
}

}  // namespace

std::string HttpRequest::header(const std::string& n) const { return find_header(headers, n); }
std::string HttpResponse::header(const std::string& n) const { return find_header(headers, n); }

std::string HttpRequest::query_param(const std::string& name) const {
  std::string_view q = query;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view kv = q.substr(0, amp);
    size_t eq = kv.find('=');
    if (kv.substr(0, eq) == name) return eq == std::string_view::npos ? "" : std::string(kv.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return "";
}

bool HttpReader::fill() {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  char tmp[16384];
  for (;;) {
    ssize_t n = ::read(fd_, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("read: ") + std::strerror(errno));
    if (n == 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    bytes_read_ += static_cast<uint64_t>(n);
    return true;
  }
}

bool HttpReader::read_head(std::string& head) {
  for (;;) {
    size_t end = buf_.find("\r\n\r\n", pos_);
    if (end != std::string::npos) {
      head.assign(buf_, pos_, end + 4 - pos_);
      pos_ = end + 4;
      return true;
    }
    if (buf_.size() - pos_ > kMaxHead) throw std::runtime_error("header too large");
    bool had_bytes = buf_.size() > pos_;
    if (!fill()) {
      if (had_bytes) throw std::runtime_error("connection closed inside a header");
      return false;
    }
  }
}

void HttpReader::read_body(const Headers& h, std::string& body) {
  body.clear();
  uint64_t n = body_length(h);
  while (buf_.size() - pos_ < n) {
    if (!fill()) throw std::runtime_error("connection closed inside a body");
  }
  body.assign(buf_, pos_, n);
  pos_ += n;
}

bool HttpReader::read_request(HttpRequest& req) {
  std::string head;
  if (!read_head(head)) return false;
  parse_request_head(head, req);
  read_body(req.headers, req.body);
  return true;
}

size_t parse_request(std::string_view data, HttpRequest& req) {
  size_t end = data.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (data.size() > kMaxHead) throw std::runtime_error("header too large");
    return 0;
  }
  parse_request_head(std::string(data.substr(0, end + 4)), req);
  uint64_t n = body_length(req.headers);
  if (data.size() - (end + 4) < n) return 0;
  req.body.assign(data.substr(end + 4, n));
  return end + 4 + n;
}

void HttpReader::read_response(HttpResponse& resp) {
  std::string head;
  if (!read_head(head)) throw std::runtime_error("connection closed before a response");
  resp.headers.clear();
  std::string line = parse_head(head, resp.headers);
  if (line.compare(0, 5, "HTTP/") != 0 || line.size() < 12) throw std::runtime_error("malformed status line");
  resp.status = std::atoi(line.c_str() + 9);
  read_body(resp.headers, resp.body);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    default: return "Status";
  }
}

std::string format_request(const std::string& method, const std::string& target, const std::string& host,
                           const Headers& headers, std::string_view body) {
  std::string s = method + " " + target + " HTTP/1.1\r\nHost: " + host +
                  "\r\nUser-Agent: txray-samples/1.0\r\nAccept: */*\r\n";
  for (const auto& [k, v] : headers) s += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT")
    s += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  s += "\r\n";
  s.append(body);
  return s;
}

std::string format_response(const HttpResponse& resp, bool keep_alive) {
  std::string s = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason_phrase(resp.status) + "\r\n";
  // What every real server sends: its name and the date (RFC 9110 IMF-fixdate).
  char date[64];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  s += "Server: txray-samples/1.0\r\nDate: ";
  s += date;
  s += "\r\n";
  for (const auto& [k, v] : resp.headers) s += k + ": " + v + "\r\n";
  s += "Content-Length: " + std::to_string(resp.body.size()) + "\r\n";
  s += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  // One write for head and body: a single buffer keeps the samples' syscalls simple and predictable.
  s += resp.body;
  return s;
}

HttpResponse HttpClient::request(const std::string& method, const std::string& target, const Headers& headers,
                                 std::string_view body, bool keep_alive) {
  if (!fd_) {
    fd_.reset(connect_tcp(host_, port_));
    bytes_read_total_ += reader_.bytes_read();
    reader_ = HttpReader(fd_.get());
  }
  Headers h = headers;
  if (!keep_alive) h["Connection"] = "close";
  std::string msg = format_request(method, target, host_ + ":" + std::to_string(port_), h, body);
  if (!write_all(fd_.get(), msg)) {
    close();
    throw std::runtime_error("write to " + host_ + ":" + std::to_string(port_) + " failed");
  }
  bytes_written_ += msg.size();
  HttpResponse resp;
  try {
    reader_.read_response(resp);
  } catch (...) {
    close();
    throw;
  }
  if (!keep_alive || lower(resp.header("connection")) == "close") {
    bytes_read_total_ += reader_.bytes_read();
    fd_.reset();
    reader_ = HttpReader(-1);
  }
  return resp;
}

void HttpServer::serve_forever() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
      return;  // the listening socket was shut down
    }
    std::thread([this, fd] { serve_connection(fd); }).detach();
  }
}

void HttpServer::serve_connection(int raw_fd) {
  Fd fd(raw_fd);
  HttpReader reader(fd.get());
  for (;;) {
    HttpRequest req;
    HttpResponse resp;
    bool keep_alive = true;
    try {
      if (!reader.read_request(req)) return;
      keep_alive = lower(req.header("connection")) != "close";
      try {
        handler_(req, resp);
      } catch (const std::exception& e) {
        resp = HttpResponse{};
        resp.status = 500;
        resp.headers["Content-Type"] = "text/plain";
        resp.body = std::string(e.what()) + "\n";
      }
    } catch (const std::exception& e) {  // malformed request: answer and drop the connection
      resp = HttpResponse{};
      resp.status = 400;
      resp.headers["Content-Type"] = "text/plain";
      resp.body = std::string(e.what()) + "\n";
      keep_alive = false;
    }
    if (!write_all(fd.get(), format_response(resp, keep_alive)) || !keep_alive) return;
  }
}

}  // namespace txray::samples
