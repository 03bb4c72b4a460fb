// The seam between the outbound dispatch (http_out.cpp) and the parsers of request/response protocols
// that are not HTTP — PostgreSQL (protocols/pg), MySQL/MariaDB (protocols/mysql), and the caches after
// them. The dispatch recognises such a connection by its first bytes (the client's first write, or the
// server's greeting when the server speaks first), makes the protocol's WireClient for it and feeds it
// every byte the program wrote and read, in order, unchanged and split wherever the program's calls split
// them. A client never writes to the socket and never changes a byte; it keeps what it needs of the
// stream in bounded buffers, and when it meets bytes it does not understand it counts that once and
// says stopped(): the dispatch lets the connection go (its reads and writes only count bytes from then).
//
// Calls into a client are serialised by the dispatch (the connection's HoldFlag): a driver may write a
// statement on one thread and read its reply on another (JDBC pools, the JDK's selector threads).
//
// One source per statement: a connection opened or used inside a hooked client library (libpq,
// libmariadb: HookFamily::sql on the thread) gets no WireClient — the library hooks already record its
// statements with typed binds — and a WireClient whose connection turns out to be driven by such a
// library is ended without rows (see http_out.cpp, `library`).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/attribution.h"
#include "core/fd_table.h"

namespace txray {

// What a protocol client is told of its connection when it is made.
struct WireEnv {
  FdSlot* slot = nullptr;    // the socket's byte counters (bytes_read / bytes_written), for rows' bytes
  const char* peer = "";     // "addr:port" ("[v6]:port") of the server
  // Who the next statement written on the connection belongs to when that is known apart from the
  // writing thread (the request that connected it; a runtime's `O` hint or hint board): pass it to
  // wire::statement_tx() when a statement starts. Lives as long as the client.
  ReqRef* owner = nullptr;
};

class WireClient {
 public:
  virtual ~WireClient() = default;
  // The program's bytes as they went out / came in (n > 0), in stream order.
  virtual void on_sent(const char* p, size_t n) = 0;
  virtual void on_received(const char* p, size_t n) = 0;
  // The connection ended (the server closed it, or the program closes it): rows still open are closed,
  // with `why` as their error when it is not empty. The client may be reset() for the slot's next
  // connection afterwards.
  virtual void on_end(std::string_view why) = 0;
  // Bytes the program sent that the agent cannot see (sendfile: nginx sends a request body it buffered
  // in a file that way): true when the client accounts for them and goes on following the stream (a
  // body it only counts, as uwsgi's), false when it cannot — the dispatch then lets the connection go.
  virtual bool on_sent_opaque(uint64_t /*n*/) { return false; }
  // Owners a runtime listed for the connection's next commands (hints/hint_board.h: node-redis writes the
  // commands of many requests in one write): owners[i] names command first + i, counted from the
  // connection's first. The dispatch reads the list at each write, before on_sent, for a client whose
  // max_listed_owners() is not 0 (at most that many are passed).
  virtual size_t max_listed_owners() const { return 0; }
  virtual void on_listed_owners(const ReqRef* /*owners*/, size_t /*n*/, uint32_t /*first*/) {}
  // True once the client gave up following the stream (it counted why: counters().streams_unparsed):
  // no more bytes are fed to it.
  virtual bool stopped() const = 0;
  // True once client and server agreed to switch to TLS (PostgreSQL's SSLRequest answered 'S', MySQL's
  // SSL request packet): from the next byte the socket carries TLS records, which the dispatch no longer
  // feeds; the plaintext comes through the OpenSSL hooks instead when the program uses libssl on this
  // socket (the same on_sent / on_received, same order). A runtime with its own TLS (the JVM's JSSE) never
  // feeds it: the connection stays a socket, counted once by the dispatch.
  virtual bool tls_started() const { return false; }
  // Clients that add to what the program writes — the trace context a FastCGI or uwsgi request carries
  // to its callee (protocols/fastcgi/splice.h has the byte accounting): lays out the program's write
  // (iov, cnt entries) with the client's edits into out, which has room for cnt + kWriteExtra entries,
  // and returns the entry count; 0 when there is nothing to insert nor pending (the plain write). After
  // the real write, commit_write(accepted) maps the wire bytes the kernel took back to the program's
  // bytes (what the program is told, and what on_sent() is then given). A write that failed commits
  // nothing: the next write plans again.
  static constexpr int kWriteExtra = 17;
  virtual int plan_write(const iovec* /*iov*/, int /*cnt*/, iovec* /*out*/) { return 0; }
  virtual size_t commit_write(size_t accepted) { return accepted; }
};

namespace wire {

// The transaction a statement (or command) starting now on a connection belongs to: the owner when one
// is named (an owner names one statement: it is consumed), and nobody's when that request is over
// (never the writing thread's guess on an event loop); else the calling thread's (rec::current(): the
// unattributed container when the agent cannot tell). nullptr: record nothing.
Transaction* statement_tx(ReqRef& owner);

}  // namespace wire
}  // namespace txray
