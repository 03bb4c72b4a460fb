#include "protocols/mysql/mysql_client.h"

#include <algorithm>
#include <new>

#include "protocols/mysql/mysql_conn.h"

namespace txray::mysql {

bool looks_like_greeting(const char* p, size_t n) {
  // The header (a length a greeting can have, sequence 0) and as much of protocol 10 and the version as
  // the read holds: Connector/J reads a packet's 4-byte header alone first.
  if (!p || n < 4) return false;
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  uint32_t len = uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16;
  // A greeting is some tens of bytes: protocol, version, id, scramble, capabilities, plugin name.
  if (u[3] != 0 || len < 16 || len > 1024) return false;
  if (n == 4) return true;
  if (u[4] != 10) return false;
  size_t end = std::min<size_t>(n, 4 + size_t(len));
  for (size_t i = 5; i < end; ++i) {
    if (u[i] == 0) return i > 5;  // the version ends within the packet, and is not empty
    if (u[i] < 0x20 || u[i] > 0x7e || i - 5 >= 64) return false;
  }
  return end < 4 + size_t(len);  // the read ends inside the version: what is there fits
}

WireClient* make_client(const WireEnv& env) { return new (std::nothrow) Conn(env, wire::statement_tx); }

}  // namespace txray::mysql
