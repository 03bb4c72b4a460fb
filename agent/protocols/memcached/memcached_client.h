// memcached, text and meta protocols, client side, followed on the wire (pymemcache, libmemcached and
// its tools, any client that speaks the text protocol). The dispatch (protocols/dispatch/http_out.cpp)
// recognises the connection by the first bytes the program writes and feeds the client every byte both
// ways; the client records one MEMCACHED row per command, in the transaction that wrote it: the
// command and its key pattern (protocols/redis/cache_key.h), hit or miss, bytes (docs/protocols.md).
// The binary protocol (first byte 0x80) is not followed.
#pragma once

#include <cstddef>

#include "protocols/dispatch/wire_client.h"

namespace txray::memcached {

// The first bytes of a connection's first write start a text or meta command: a lowercase command
// name (get, set, mg, ms, version, stats…) followed by a space or "\r\n".
bool looks_like_command(const char* p, size_t n);  // p/n: up to the first 24 bytes of the write

// new (std::nothrow); nullptr on failure; the dispatch owns and deletes it.
WireClient* make_client(const WireEnv& env);
// The same with the function that names the transaction a command starting now belongs to
// (wire::statement_tx; tests pass their own).
using StatementTx = Transaction* (*)(ReqRef& owner);
WireClient* make_client(const WireEnv& env, StatementTx statement_tx);

}  // namespace txray::memcached
