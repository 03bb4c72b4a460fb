// FastCGI, client side (nginx's fastcgi_pass, any program that speaks FastCGI to an application): a call
// row per request in the calling request's transaction, and the trace context carried to the
// application in the request's params.
//
// The dispatch (protocols/dispatch/http_out.cpp) recognises the connection by its first write (a
// BEGIN_REQUEST record: looks_like_request) and feeds the client every byte both ways (wire_client.h).
//   - BEGIN_REQUEST opens an HTTP_CALL row (attribute protocol=fastcgi) in the transaction the request
//     belongs to (wire::statement_tx: the request that connected the socket for its first request, as
//     for HTTP); the end of its PARAMS gives the row its text `fastcgi://peer/path` (the query masked as a
//     URL's, core/redact.h) and `method`; the `Status:` line of the STDOUT stream is its status (200
//     without one), END_REQUEST closes it (time, bytes: STDIN written, STDOUT read); the connection's
//     end before that closes it with an error.
//   - plan_write/commit_write: before a request's first PARAMS record the client inserts a PARAMS
//     record of its own with HTTP_TRACEPARENT (the row's span id as parent id), HTTP_TRACESTATE and
//     HTTP_BAGGAGE when the transaction has them (splice.h: the program's byte counts unchanged). The
//     application's side takes the first HTTP_TRACEPARENT of the params, which is this one, so a front
//     that also passes its client's `traceparent` header on (nginx's fastcgi_params) still links its
//     own call row to the application's transaction. TXRAY_PROPAGATE=0 turns the insertion off.
// Bytes that break the record format stop the client (counted once: streams_unparsed); it never
// changes a byte then.
#pragma once

#include <cstddef>

#include "protocols/dispatch/wire_client.h"

namespace txray::fcgi {

// The first bytes of a connection's first write are a FastCGI BEGIN_REQUEST record: version 1, type 1,
// a request id other than 0, content length 8, a role of 1..3, reserved bytes 0 (those present of the
// 16). p/n: up to the first 24 bytes of the write; at least 8 needed.
bool looks_like_request(const char* p, size_t n);

// new (std::nothrow); nullptr on failure; the dispatch owns and deletes it.
WireClient* make_client(const WireEnv& env);

// Whether the client inserts the trace context (TXRAY_PROPAGATE, read once; tests set it).
void set_propagate_for_test(int on);

}  // namespace txray::fcgi
