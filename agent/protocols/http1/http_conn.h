// Inbound HTTP/1.x over one accepted connection: turns requests into transactions.
//
// Requests may arrive split over many reads; a head is accumulated up to http::kMaxHead, else the
// connection is given up. A first line that is not HTTP/1.x stops watching the connection. When a head
// is complete a transaction begins (START row) and becomes the reading thread's current transaction;
// the response written on the connection is followed (ResponseTracker) and when it is complete the
// transaction ends (END row). Keep-alive: one transaction per request; a pipelined request waits until
// the previous response is complete. HTTP/2 (h2_conn.h) takes over a connection that begins with the
// client preface, or whose request with `Upgrade: h2c` is answered 101 Switching Protocols.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/hold.h"
#include "protocols/http1/http_parse.h"

namespace txray {

struct Transaction;
class H2Server;  // h2_conn.h
class FcgiServer;   // protocols/fastcgi/fastcgi_conn.h
class UwsgiServer;  // protocols/uwsgi/uwsgi_conn.h

struct HttpConn {
  // Held while one thread works on this state (socket_events.cpp: ConnGuard; hold.h).
  HoldFlag lock;
  std::string client_addr;
  int fd = -1;               // the connection's descriptor
  uint32_t seq = 0;          // requests begun on this connection so far (the current one's number)
  std::string buf;           // bytes of the next request head (and anything read after it)
  size_t scanned = 0;        // how much of buf was searched for the end of the head
  bool watching = true;      // false: not HTTP, or given up
  http::BodyFramer req_body; // the body of the current request, as it is read
  Transaction* tx = nullptr; // the current request's transaction (owned by this connection)
  http::ResponseTracker resp;
  // HTTP/2: the connection began with the client preface; every stream is its own transaction
  // (h2_conn.h). Allocated the first time, kept for the next connection on this slot.
  H2Server* h2 = nullptr;
  bool h2_active = false;
  // The current request asked for `Upgrade: h2c`: a 101 answer turns the connection into HTTP/2, the
  // request into its stream 1 (upgrade_h2()).
  bool upgrade_h2c = false;
  // A gateway protocol: the first bytes were a FastCGI BEGIN_REQUEST record or a uwsgi packet header
  // (php-fpm, uWSGI behind nginx); that tracker follows the connection instead. Allocated the first
  // time, kept for the next connection on this slot.
  enum class Gateway : uint8_t { none, fastcgi, uwsgi };
  Gateway gateway = Gateway::none;
  FcgiServer* fcgi = nullptr;
  UwsgiServer* uwsgi = nullptr;

  HttpConn() = default;
  ~HttpConn();
  HttpConn(const HttpConn&) = delete;
  HttpConn& operator=(const HttpConn&) = delete;
  // A fresh connection (the slot's HttpConn is reused for the next connection on the same fd).
  void reset(std::string_view client, int fd = -1);
  // Bytes the program read from the connection.
  void on_read(const char* p, size_t n);
  // Bytes the program wrote to it (response); opaque = contents not visible (sendfile).
  void on_write(const char* p, size_t n);
  void on_write_opaque(uint64_t n);
  // The connection is closed (or shut down for writing): an unfinished response ends its transaction.
  void on_close();
  // In a forked child: the requests in flight are the parent's.
  void forget_after_fork();
  // The request in flight on this connection with this txid (0: any; for FastCGI's multiplexed ids the
  // one begun last), whichever protocol it speaks; and whether there is one.
  Transaction* request(uint64_t txid) const;
  bool in_request() const;

 private:
  bool try_h2();
  bool try_gateway();
  bool gateway_read(const char* p, size_t n);
  void upgrade_h2(const char* rest, size_t n);
  void try_begin();
  bool try_begin_in_place(const char* p, size_t n);
  bool begin_request(std::string_view head);
  void begin_parsed(const http::RequestHead& head, size_t head_size);
  void trace_headers(const http::RequestHead& head, size_t head_size);
  void finish(int status, const char* error);
};

}  // namespace txray
