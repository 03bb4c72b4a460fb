#include "protocols/mysql/mysql_client.h"

#include <algorithm>
#include <new>

#include "protocols/mysql/mysql_conn.h"

namespace txray::mysql {

bool looks_like_greeting(const char* p, size_t n) {
  // Header (length, sequence 0), protocol 10 and at least one character of the version.
  if (!p || n < 6) return false;
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  uint32_t len = uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16;
  // A greeting is some tens of bytes: protocol, version, id, scramble, capabilities, plugin name.
  if (u[3] != 0 || len < 16 || len > 1024 || u[4] != 10) return false;
  size_t end = std::min<size_t>(n, 4 + size_t(len));
  for (size_t i = 5; i < end; ++i) {
    if (u[i] == 0) return i > 5;  // the version ends within the packet, and is not empty
    if (u[i] < 0x20 || u[i] > 0x7e || i - 5 >= 64) return false;
  }
  return end < 4 + size_t(len);  // the read ends inside the version: what is there fits
}

WireClient* make_client(const WireEnv& env) { return new (std::nothrow) Conn(env, wire::statement_tx); }

}  // namespace txray::mysql
