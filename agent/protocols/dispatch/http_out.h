// Outbound HTTP/1.x on the program's client sockets: the glue between the socket hooks, the client
// tracker (http_client.h), header insertion (http_inject.h) and the recorder.
//
// The socket layer calls these for FdKind::outbound descriptors only. A connection is classified by
// its first write: if it does not start with an HTTP method, it is marked "not HTTP" once and every
// later call costs one load and one compare. For an HTTP connection each request becomes an HTTP_CALL
// step of the thread's transaction (opened when its head is written, closed at the last byte of its
// response), and, when propagation is on and the thread has a transaction, a `traceparent` line is
// inserted after the request line (write_through()).
//
// Inside libcurl (curl_hooks.cpp holds the http_call hook family while it runs) no steps are opened
// here — the curl hook records the transfer — but the header is still inserted, with the curl step's
// span id when there is one (set_call_span()).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/fd_table.h"
#include "core/attribution.h"
#include "protocols/http2/h2_client.h"
#include "protocols/http1/http_client.h"

namespace txray {

// Turns tracker callbacks into HTTP_CALL rows of the calling thread's transaction: opened when a
// request head is written (text = URL, id = span id, attribute method), attribute ttfb_us at the first
// response byte, closed at the response's end with status, bytes (read = response, written =
// request) and the error, if any; the call time goes to the transaction's totals. Records nothing
// while a libcurl hook runs on the thread (that hook describes the transfer).
class CallSink : public HttpClientSink {
 public:
  const char* scheme = "http";
  char peer[72] = "";  // "addr:port", the URL's host when a request has no Host header
  // A row opened before the write that starts a request (write_through), so that the call's elapsed
  // time includes sending it; the request's head then takes it over in on_request.
  StepRef preopened;
  // Who the next request written on this connection belongs to, when known apart from the writing
  // thread: the request that connected it, or the one a runtime's `O` hint named (attribution.h).
  ReqRef owner;

  void on_request(HttpCall& c, const HttpRequestHead& h) override;
  void on_first_byte(HttpCall& c) override;
  void on_response(HttpCall& c, std::string_view error) override;
};

// HTTP/2 calls of one client connection: rows of the calling thread's transaction, one per stream
// (h2_client.h). For gRPC (content-type application/grpc*) the row is an HTTP_CALL marked as gRPC:
// text "grpc://authority/package.Service/Method", attribute rpc=grpc, grpc_status / grpc_message, and
// the error "grpc-status N NAME: message" when N is not 0.
class H2Sink final : public H2CallSink {
 public:
  const char* scheme = "http";
  const char* peer = "";  // the connection's "addr:port" (CallSink::peer)
  ReqRef* owner = nullptr;  // the connection's first-request owner (CallSink::owner)
  void on_request(H2Call& c, const h2::HeaderList& h) override;
  void on_first_byte(H2Call& c) override;
  void on_response(H2Call& c, std::string_view error) override;
};

struct HttpClientConn;  // http_out.cpp

namespace http_out {

// The configuration this part reads once from the environment:
//   TXRAY_PROPAGATE=0   no traceparent insertion (default on)
// (What a call URL keeps of its query, userinfo and path is the redaction policy's: core/redact.h.)
bool propagate();

// A connect on fd (outbound slot s) to addr:port is starting: a fresh client state for the slot.
void on_connect(FdSlot* s, std::string_view addr, int port);

// Writes through the program's write hook: `write_fn` is the real call (writev/sendmsg with the
// program's flags), `ctx` its argument. Returns false when there is nothing to insert or flush — the
// hook then makes its plain call and reports it with on_sent(). Returns true when the write was made
// here: *result is what the program must see (its own bytes only; -1 with errno as the real call set
// it), and the bytes were already counted.
using WriteFn = ssize_t (*)(int fd, const iovec* iov, int cnt, void* ctx);
bool write_through(FdSlot* s, int fd, const iovec* iov, int cnt, WriteFn write_fn, void* ctx, ssize_t* result);

// The slot's client connection (FdSlot::client) is allocated by on_connect() the first time its fd
// number is connected, and reused (like the inbound HttpConn) for every later connection on it. True
// while it follows the connection's bytes (FdSlot::http_live): not once the connection turned out not
// to be HTTP, so a plain read or write on such a socket costs one more load and compare, nothing else.
inline bool has_client(const FdSlot* s) { return s->http_live.load(std::memory_order_relaxed); }

// Bytes the program wrote (plain path) / read on an outbound socket. Each returns at once for a
// connection that is not HTTP.
void on_sent(FdSlot* s, const char* p, size_t n);
void on_sentv(FdSlot* s, const iovec* iov, int cnt, size_t n);
void on_sent_opaque(FdSlot* s, uint64_t n);  // sendfile
void on_received(FdSlot* s, const char* p, size_t n);
void on_receivedv(FdSlot* s, const iovec* iov, int cnt, size_t n);
// A wire client (wire_client.h) whose connection switched to TLS takes the plaintext from the OpenSSL
// hooks: tls_wire(fd) tells whether socket fd has such a client waiting (asked once, at the SSL object's
// first plaintext), tls_plaintext() feeds it the program's plaintext written (sent) or read. False: no
// such client (the SSL hooks follow the connection as HTTPS themselves).
bool tls_wire(int fd);
bool tls_plaintext(int fd, bool sent, const char* p, size_t n);
// A connection that was TLS from its first byte (redis-py with ssl=True, a Redis or memcached client on
// a TLS port): the first plaintext the program writes through libssl picks the wire client a first write
// on a plain socket would (Redis, memcached), fed the plaintext only from then on (tls_plaintext). False:
// not such a protocol, or the socket is not an outbound one the agent follows.
bool tls_first_plaintext(int fd, const char* p, size_t n);

// The peer ended the stream (read returned 0) / the program closes the socket: ends its calls.
void on_eof(FdSlot* s);
void on_close(FdSlot* s, int fd);  // fd: its hint-board slot is emptied

// The next request written on outbound slot s belongs to r (set at connect, or by a runtime hint).
void set_owner(FdSlot* s, const ReqRef& r);

// The transaction an HTTP/2 stream written now belongs to: the process's one transaction (process mode),
// else the unattributed container — never the writing thread's request. The thread that writes a
// stream's HEADERS frame need not be the one that issued the call: gRPC's C core runs a call's write on
// whichever thread holds the transport's lock, often another caller's (docs/http2.md, "Which request a
// call belongs to": measured, 37 of 1,280 calls written by another caller thread).
Transaction* h2_call_tx();

// Id for the traceparent inserted by the calling thread until reset to 0 (the curl hook's step).
void set_call_span(uint64_t span_id);

// libcurl's multi interface: its rows are made when a transfer's handle is removed, long after its
// request was written. The span ids inserted meanwhile (with no set_call_span) are kept per thread with
// the request's URL (as http_call_url writes it), and the curl hook claims the one of its transfer, so
// that those calls link to their callees too. Returns 0 when none matches.
uint64_t claim_curl_span(std::string_view url);

}  // namespace http_out
}  // namespace txray
