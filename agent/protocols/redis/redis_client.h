// Redis (RESP2 and RESP3), client side, followed on the wire: redis-py, node-redis, hiredis and the
// clients built on its code (redis-cli, redis-benchmark, phpredis) write RESP themselves. The dispatch
// (protocols/dispatch/http_out.cpp) recognises the connection by the first bytes the program writes and
// feeds the client every byte both ways; the client records one REDIS row per command, in the
// transaction that wrote it (docs/protocols.md). resp.h reads the bytes, cache_key.h masks the keys.
#pragma once

#include <cstddef>

#include "protocols/dispatch/wire_client.h"

namespace txray::redis {

// The first bytes of a connection's first write start a RESP command: `*<count>\r\n$`. Inline commands
// (`PING\r\n`) are not taken: they cannot be told from other line protocols.
bool looks_like_command(const char* p, size_t n);  // p/n: up to the first 24 bytes of the write

// new (std::nothrow); nullptr on failure; the dispatch owns and deletes it.
WireClient* make_client(const WireEnv& env);
// The same with the function that names the transaction a command starting now belongs to
// (wire::statement_tx; tests pass their own).
using StatementTx = Transaction* (*)(ReqRef& owner);
WireClient* make_client(const WireEnv& env, StatementTx statement_tx);

}  // namespace txray::redis
