// The dispatch's entry into the PostgreSQL client (pg_client.h); the parts are in pg_conn.h and
// pg_messages.h. Kept apart so that the unit tests link the parser with their own transaction source.
#include "protocols/pg/pg_client.h"

#include <new>

#include "protocols/pg/pg_conn.h"

namespace txray::pg {

WireClient* make_client(const WireEnv& env) { return new (std::nothrow) PgConn(env, &wire::statement_tx); }

}  // namespace txray::pg
