// Inbound HTTP/2 over one accepted connection (prior knowledge h2c, and TLS with ALPN h2 through the
// SSL hooks): each stream is a transaction of its own, however many are in flight at once.
//
// HttpConn (http_conn.h) hands the connection over when its first bytes are the client preface. The
// bytes the program reads are the client's frames (requests), the bytes it writes the server's
// (responses); each direction has its own frame reader and HPACK decoder (h2_frames.h).
//   - a request's HEADERS begins the stream's transaction: name ":method :path" (for gRPC, whose
//     :path is the full method, "POST /package.Service/Method"), kind "grpc" when its content-type is
//     application/grpc*, else "http"; its `traceparent`, if any, is the caller's context;
//   - the response's :status is the transaction's status; gRPC's grpc-status / grpc-message (from
//     the trailers, or a trailers-only response) become attributes, and a non-zero grpc-status its
//     error; END_STREAM of the response (or RST_STREAM either way, or the connection's end) ends it;
//   - bytes read/written: the stream's frames (headers and DATA).
// Which thread's work belongs to a stream cannot be told from a socket that carries many streams (a
// gRPC server reads on its pollers and runs handlers on a pool): the stream transactions are never made
// any thread's current transaction, so steps made while they are in flight go where the other rules say
// (attribution.h) — never to a stream they may not belong to. Docs: docs/http2.md.
//
// A frame reader that gives up (garbage, a mid-stream start) ends the streams in flight and stops
// following the connection. At most kMaxStreams streams are followed at once; more are counted and left
// out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocols/http2/h2_frames.h"

namespace txray {

struct Transaction;

class H2Server {
 public:
  static constexpr size_t kMaxStreams = 256;

  H2Server();
  ~H2Server();
  void reset(std::string_view client);
  // HTTP/1.1 `Upgrade: h2c` answered 101 (RFC 7540 §3.2): a fresh connection state whose stream 1 is
  // the upgraded request's transaction t (already begun, its request complete); its response comes on
  // stream 1. The client's preface follows on the read side, the server's frames on the write side.
  void reset_upgraded(std::string_view client, Transaction* t);
  // Bytes the program read from / wrote to the connection. Return false once the connection is given
  // up (both readers dead or the request side dead).
  bool on_read(const char* p, size_t n);
  bool on_write(const char* p, size_t n);
  // The connection ends: streams in flight end with an error.
  void on_close();
  // In a forked child: the streams in flight are the parent's (not ended, nor freed, here).
  void forget();
  bool dead() const;
  size_t open_streams() const;

 private:
  struct Stream {
    uint32_t id = 0;
    Transaction* tx = nullptr;
    bool grpc = false;
    bool indexed = false;  // span_owner.h knows it by its caller span: request_ended() before its end
    bool request_done = false;
    bool response_headers = false;
    int status = 0;
    int grpc_status = -1;
    std::string grpc_message;
  };
  class ReqSide;
  class RespSide;
  friend class ReqSide;
  friend class RespSide;

  Stream* find(uint32_t id);
  void begin(uint32_t id, const h2::HeaderList& h, size_t wire, bool end_stream);
  void response_headers(Stream& s, const h2::HeaderList& h);
  void finish(Stream& s, const char* error);
  void give_up();

  std::string client_;
  h2::FrameReader in_;
  h2::FrameReader out_;
  Stream streams_[kMaxStreams];
  size_t used_ = 0;  // streams_[0..used_) may be in use (id != 0)
};

}  // namespace txray
