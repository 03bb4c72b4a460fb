#include "server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <vector>

#include "http_request.h"

namespace txray::metrics {

bool parse_listen(const std::string& s, bool allow_remote, uint32_t* addr_be, uint16_t* port, std::string* why) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 >= s.size()) {
    *why = "--metrics-listen wants HOST:PORT, e.g. 127.0.0.1:9464: " + s;
    return false;
  }
  std::string host = s.substr(0, colon), p = s.substr(colon + 1);
  if (host == "localhost") host = "127.0.0.1";
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) != 1) {
    *why = "--metrics-listen: not an IPv4 address: " + host;
    return false;
  }
  unsigned long v = 0;
  for (char c : p) {
    if (c < '0' || c > '9' || v > 65535) {
      *why = "--metrics-listen: bad port: " + p;
      return false;
    }
    v = v * 10 + static_cast<unsigned long>(c - '0');
  }
  if (v > 65535) {
    *why = "--metrics-listen: bad port: " + p;
    return false;
  }
  bool loopback = (ntohl(a.s_addr) >> 24) == 127;
  if (!loopback && !allow_remote) {
    *why = "--metrics-listen " + s + " is reachable from other machines: add --metrics-allow-remote to mean it";
    return false;
  }
  *addr_be = a.s_addr;
  *port = static_cast<uint16_t>(v);
  return true;
}

Server::~Server() { stop(); }

bool Server::start(const ServerOptions& opts, Render render, std::string* why) {
  uint32_t addr = 0;
  uint16_t port = 0;
  if (!parse_listen(opts.listen, opts.allow_remote, &addr, &port, why)) return false;
  opts_ = opts;
  render_ = std::move(render);
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr;
  sa.sin_port = htons(port);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(listen_fd_, 64) != 0) {
    *why = "--metrics-listen " + opts.listen + ": " + std::string(strerror(errno));
    close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  socklen_t sl = sizeof sa;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &sl);
  port_ = ntohs(sa.sin_port);
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    *why = "pipe: " + std::string(strerror(errno));
    return false;
  }
  thread_ = std::thread([this] { loop(); });
  return true;
}

void Server::stop() {
  if (thread_.joinable()) {
    char c = 1;
    (void)!write(wake_[1], &c, 1);
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]})
    if (*fd >= 0) {
      close(*fd);
      *fd = -1;
    }
}

namespace {
struct Conn {
  int fd;
  std::chrono::steady_clock::time_point deadline;
  std::string in, out;
  size_t sent = 0;
  bool answered = false;
};
}  // namespace

void Server::loop() {
  std::vector<Conn> conns;
  std::vector<pollfd> pfds;
  for (;;) {
    pfds.clear();
    pfds.push_back({wake_[0], POLLIN, 0});
    pfds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : conns) pfds.push_back({c.fd, static_cast<short>(c.answered ? POLLOUT : POLLIN), 0});
    int n = poll(pfds.data(), pfds.size(), 200);
    if (n < 0 && errno != EINTR) break;
    if (pfds[0].revents) break;  // stop()
    auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      short ev = pfds[i + 2].revents;
      bool done = false;
      if (!c.answered && (ev & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        ssize_t r = read(c.fd, buf, sizeof buf);
        if (r > 0) {
          c.in.append(buf, static_cast<size_t>(std::min<ssize_t>(r, static_cast<ssize_t>(kMaxRequestBytes + 1))));
          HttpRequest req = parse_request(c.in);
          if (req.status != ParseStatus::kIncomplete) {
            if (req.status == ParseStatus::kOk) ++requests_;
            else ++refused_;
            c.out = respond(req, render_);
            c.answered = true;
            c.in.clear();
          }
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          done = true;
        }
      }
      if (c.answered && !done) {
        while (c.sent < c.out.size()) {
          ssize_t w = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
          if (w > 0) {
            c.sent += static_cast<size_t>(w);
          } else {
            if (w < 0 && (errno == EAGAIN || errno == EINTR)) break;
            done = true;
            break;
          }
        }
        if (c.sent >= c.out.size()) done = true;
      }
      if (!done && now > c.deadline) {
        ++refused_;
        done = true;
      }
      if (done) {
        close(c.fd);
        c.fd = -1;
      }
    }
    std::erase_if(conns, [](const Conn& c) { return c.fd < 0; });
    if (pfds[1].revents & POLLIN) {
      for (int k = 0; k < 16; ++k) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (conns.size() >= kMaxConnections) {  // the oldest is the likeliest to be stuck
          ++refused_;
          close(conns.front().fd);
          conns.erase(conns.begin());
        }
        conns.push_back(Conn{fd, now + opts_.deadline, {}, {}, 0, false});
      }
    }
  }
  for (auto& c : conns) close(c.fd);
}

}  // namespace txray::metrics
