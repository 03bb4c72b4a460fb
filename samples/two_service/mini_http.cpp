#include "mini_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace two_service {
namespace {

bool write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += size_t(n);
  }
  return true;
}

// Reads into buf until it holds a whole head ("\r\n\r\n"); returns the head's length incl. the blank
// line, or 0 on EOF/error.
size_t read_head(int fd, std::string& buf) {
  for (;;) {
    size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) return end + 4;
    if (buf.size() > 64 * 1024) return 0;
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    buf.append(tmp, size_t(n));
  }
}

bool read_body(int fd, std::string& buf, size_t head_len, size_t len, std::string& body) {
  while (buf.size() < head_len + len) {
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(tmp, size_t(n));
  }
  body = buf.substr(head_len, len);
  buf.erase(0, head_len + len);
  return true;
}

// Value of a header in a head (case-insensitive name), empty when absent.
std::string header(const std::string& head, const char* name) {
  size_t nlen = strlen(name);
  size_t pos = head.find("\r\n");
  while (pos != std::string::npos && pos + 2 < head.size()) {
    size_t start = pos + 2;
    size_t end = head.find("\r\n", start);
    if (end == std::string::npos) break;
    if (end - start > nlen && head[start + nlen] == ':' && strncasecmp(head.c_str() + start, name, nlen) == 0) {
      size_t v = start + nlen + 1;
      while (v < end && head[v] == ' ') ++v;
      return head.substr(v, end - v);
    }
    pos = end;
  }
  return "";
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 502: return "Bad Gateway";
    default: return "Error";
  }
}

void serve_connection(int fd, const Handler& handler) {
  std::string buf;
  for (;;) {
    size_t head_len = read_head(fd, buf);
    if (!head_len) break;
    std::string head = buf.substr(0, head_len);
    Request req;
    size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) break;
    req.method = head.substr(0, sp1);
    req.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    req.keep_alive = strcasecmp(header(head, "Connection").c_str(), "close") != 0;
    size_t len = strtoul(header(head, "Content-Length").c_str(), nullptr, 10);
    if (!read_body(fd, buf, head_len, len, req.body)) break;
    Response resp = handler(req);
    std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason(resp.status) +
                      "\r\nContent-Type: " + resp.content_type +
                      "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                      (req.keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n") + resp.body;
    if (!write_all(fd, out) || !req.keep_alive) break;
  }
  close(fd);
}

}  // namespace

int serve(int port, const Handler& handler) {
  signal(SIGPIPE, SIG_IGN);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(ls, 128) != 0) {
    perror("bind/listen");
    return 1;
  }
  printf("listening on %d\n", port);
  fflush(stdout);
  for (;;) {
    int fd = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      perror("accept");
      return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread([fd, &handler] { serve_connection(fd, handler); }).detach();
  }
}

Client::~Client() {
  if (fd_ >= 0) close(fd_);
}

bool Client::connect_() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd_);
    fd_ = -1;
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  buf_.clear();
  return true;
}

bool Client::exchange(const std::string& request, int& status, std::string& body, std::string& error) {
  if (!write_all(fd_, request)) {
    error = "write failed";
    return false;
  }
  size_t head_len = read_head(fd_, buf_);
  if (!head_len) {
    error = "connection closed";
    return false;
  }
  std::string head = buf_.substr(0, head_len);
  if (head.compare(0, 7, "HTTP/1.") != 0 || head.size() < 12) {
    error = "bad status line";
    return false;
  }
  status = atoi(head.c_str() + 9);
  size_t len = strtoul(header(head, "Content-Length").c_str(), nullptr, 10);
  if (!read_body(fd_, buf_, head_len, len, body)) {
    error = "short body";
    return false;
  }
  return true;
}

bool Client::get(const std::string& target, int& status, std::string& body, std::string& error) {
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                    "\r\nUser-Agent: two-service-front\r\n\r\n";
  // A kept-alive connection the server closed meanwhile fails once: reconnect and try again.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (fd_ < 0 && !connect_()) {
      error = "connect failed";
      return false;
    }
    if (exchange(req, status, body, error)) return true;
    close(fd_);
    fd_ = -1;
  }
  return false;
}

std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

}  // namespace two_service
