// MySQL/MariaDB on the wire, as the outbound dispatch (protocols/dispatch/http_out.cpp) meets it: the
// server speaks first, and its greeting tells the protocol; the client that follows the connection from
// there is mysql_conn.h.
#pragma once

#include <cstddef>

#include "protocols/dispatch/wire_client.h"

namespace txray::mysql {

// The first bytes the server sent on a connection the program has not written to yet are a MySQL/MariaDB
// greeting: a packet of sequence 0 whose payload starts with protocol version 10 and a NUL-terminated
// server version. p/n: the read's bytes (may be short).
bool looks_like_greeting(const char* p, size_t n);

// new (std::nothrow); nullptr on failure; the dispatch owns and deletes it.
WireClient* make_client(const WireEnv& env);

}  // namespace txray::mysql
