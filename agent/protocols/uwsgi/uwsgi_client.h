// uwsgi, client side (nginx's uwsgi_pass, Apache's mod_proxy_uwsgi, any program that speaks uwsgi to an
// application server): a call row per request packet in the calling request's transaction, and the
// trace context carried to the application in the packet's vars.
//
// The dispatch (protocols/dispatch/http_out.cpp) recognises the connection by its first write
// (looks_like_request) and feeds the client every byte both ways (wire_client.h).
//   - a packet's header opens an HTTP_CALL row (attribute protocol=uwsgi) in the transaction the request
//     belongs to (wire::statement_tx: the request that connected the socket for its first request, as
//     for HTTP); the end of its vars gives the row its text `uwsgi://peer/path` (the query masked as a
//     URL's, core/redact.h) and `method`; then CONTENT_LENGTH bytes of request body (the row's bytes
//     written; also when nginx sends a body it buffered in a file by sendfile: on_sent_opaque). The
//     application answers with a raw HTTP/1.x response (http_parse.h: ResponseTracker):
//     its status line is the row's status, its bytes the row's bytes read, and its last byte closes the
//     row — or the connection's end for a response without a length (what uWSGI writes when the
//     application sets none: it closes the connection after each request). The connection's end before
//     that closes the row with an error. uWSGI writes the body of a HEAD request's answer all the same
//     (nginx drops it): after such an answer's head, the bytes until the next packet are ignored.
//   - plan_write/commit_write: the packet's 4-byte header is replaced by the header with its datasize
//     grown, followed by vars of the client's own — HTTP_TRACEPARENT (the row's span id as parent id),
//     HTTP_TRACESTATE and HTTP_BAGGAGE when the transaction has them (splice.h: the program's byte counts
//     unchanged), and only in a write that begins with the packet's header and holds its whole vars
//     block, every key of CGI-variable characters (nginx writes them from one buffer): the bytes
//     rewritten are then surely a uwsgi header. The application's side takes the first HTTP_TRACEPARENT of the vars, which is this one,
//     so a front that also passes its client's `traceparent` header on (nginx's uwsgi_params) still links
//     its own call row to the application's transaction. The datasize is 16 bits: when the packet with
//     the context would pass 65535 bytes, tracestate and baggage are left out, and when even the
//     traceparent does not fit nothing is inserted (the packet goes as the program wrote it; counted:
//     contexts_not_sent(), and the row says `propagation=skipped`). TXRAY_PROPAGATE=0 turns insertion off.
// Bytes that break the packet format (a modifier1 other than 0, vars that overrun the datasize, bytes
// after a request's body before its answer, a second answer) stop the client (counted once:
// streams_unparsed); it never changes a byte then.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/dispatch/wire_client.h"

namespace txray::uwsgi {

// The first bytes of a connection's first write are a uwsgi request packet: modifier1 0, modifier2 0,
// a datasize that holds a var, then vars that parse as far as the bytes go (keys of CGI-variable
// characters, lengths within the datasize). p/n: up to the first 24 bytes of the write; at least 7.
bool looks_like_request(const char* p, size_t n);

// new (std::nothrow); nullptr on failure; the dispatch owns and deletes it.
WireClient* make_client(const WireEnv& env);

// Packets that went without the trace context because it would not fit their 16-bit datasize.
uint64_t contexts_not_sent();

// Whether the client inserts the trace context (TXRAY_PROPAGATE, read once; tests set it; -1: read again).
void set_propagate_for_test(int on);

}  // namespace txray::uwsgi
