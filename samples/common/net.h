// Plain POSIX socket helpers for the samples. Everything goes through read/write/connect/accept on
// blocking descriptors, so that an LD_PRELOAD agent sees exactly the libc calls a simple service makes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txray::samples {

// A listening TCP socket on 127.0.0.1 (or `host`) and `port` (0 = any free port). Throws on failure.
int listen_tcp(const std::string& host, uint16_t port, int backlog = 128);
// The port a bound socket actually got.
uint16_t local_port(int fd);
// A connected TCP socket to host:port (numeric IPv4 address or a name resolved with getaddrinfo).
// Throws std::runtime_error with the reason on failure.
int connect_tcp(const std::string& host, uint16_t port);

// Writes all of `data` (retrying short writes and EINTR). False when the peer went away.
bool write_all(int fd, std::string_view data);
// Reads exactly n bytes into buf. False on EOF or error before n bytes.
bool read_exact(int fd, void* buf, size_t n);

// Closes fd on destruction (and can be moved); -1 means "none".
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
  void reset(int fd = -1);
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Parses "host:port" or "port" (host defaults to 127.0.0.1). Throws on a malformed value.
void parse_host_port(const std::string& s, std::string& host, uint16_t& port);

}  // namespace txray::samples
