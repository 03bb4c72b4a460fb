#include "burn.h"

#include <unistd.h>

#include <stdexcept>

#include "net.h"
#include "service.h"

namespace txray::samples::burner {

Fetched fetch(const std::string& host, uint16_t port) {
  Fd fd(connect_tcp(host, port));
  Fetched f;
  f.checksum = 1469598103934665603ull;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("read from back-end failed");
    if (n == 0) break;
    f.bytes += uint64_t(n);
    for (ssize_t i = 0; i < n; ++i) f.checksum = (f.checksum ^ uint8_t(buf[i])) * 1099511628211ull;
  }
  return f;  // Fd closes the socket here: the SOCKET_CLOSE row comes before the burn
}

long long burn_cpu_us(long long us) {
  long long start = thread_cpu_ns();
  long long target = start + us * 1000LL;
  volatile uint64_t x = 0;
  long long now = start;
  while (now < target) {
    for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    now = thread_cpu_ns();
  }
  return now - start;
}

std::string payload(uint64_t n) {
  std::string s(n, '\0');
  for (uint64_t i = 0; i < n; ++i) s[i] = char('a' + i % 26);
  return s;
}

}  // namespace txray::samples::burner
