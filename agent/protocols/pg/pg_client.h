// PostgreSQL protocol 3.0, client side, followed on the wire (asyncpg, node-postgres, PostgreSQL JDBC:
// drivers that do not go through libpq). The dispatch (protocols/dispatch/http_out.cpp) recognises the
// connection by the first bytes the program writes and feeds the client every byte both ways; the client
// records the connection's DB_CONNECT row and one SQL row per statement, as the libpq hooks do
// (docs/sql.md, "PostgreSQL on the wire"). pg_conn.h has the parts.
#pragma once

#include <cstddef>

#include "protocols/dispatch/wire_client.h"

namespace txray::pg {

// The first bytes of a connection's first write start PostgreSQL 3.0: StartupMessage (protocol 196608),
// SSLRequest (80877103) or GSSENCRequest (80877104). False for CancelRequest and anything else.
bool looks_like_start(const char* p, size_t n);  // p/n: up to the first 16 bytes of the write

// new (std::nothrow); nullptr on failure; the dispatch owns and deletes it.
WireClient* make_client(const WireEnv& env);

}  // namespace txray::pg
