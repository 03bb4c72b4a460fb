// Outbound HTTP/1.x tracking on one client connection: the bytes a program writes to a socket it
// connected and the bytes it reads back, turned into calls (request head → response end).
//
// Pure core: no I/O, no clocks, no recorder calls. The socket glue (agent/hooks/…) feeds the bytes the
// kernel actually accepted / delivered and reacts to the callbacks by opening and closing HTTP_CALL
// steps; each outstanding call carries the glue's StepRef so that the glue needs no table of its own.
//
// What it understands: request line + headers split over any number of writes; request bodies by
// Content-Length or chunked; keep-alive (one call per request) and pipelining (responses are matched
// to requests in order); responses with Content-Length, chunked, or read-until-close bodies; no body
// for HEAD, 1xx, 204 and 304; interim 1xx responses before the final one; 101 and a successful CONNECT
// end the call and turn the connection opaque (a tunnel is not HTTP any more) — except a 101 answering
// `Upgrade: h2c`, after which the call goes on as HTTP/2 stream 1 (take_upgraded()). A connection whose
// first bytes are not an HTTP method is marked opaque at once and costs one branch per call afterwards.
// One tracker follows one connection, used by one thread at a time (as HTTP/1.x clients do); a
// connection written and read by two threads at once may get its calls wrong, never unsafe memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/recorder.h"
#include "core/redact.h"

namespace txray {

// One outstanding request on a connection. The glue owns `step` and `span_id`; the tracker fills the rest.
struct HttpCall {
  StepRef step;                 // set by the glue in on_request
  uint64_t span_id = 0;         // span id sent in traceparent (ours or the program's own), 0 = none
  uint64_t request_bytes = 0;   // program bytes of the request (head + body), inserted header excluded
  uint64_t response_bytes = 0;  // bytes of the response read so far (interim 1xx responses included)
  int status = 0;               // final status, 0 until known
  bool head_method = false;     // HEAD: the response has no body
  bool connect_method = false;  // CONNECT: a 2xx response starts a tunnel
  bool upgrade_h2c = false;     // "Upgrade: h2c": a 101 response makes it HTTP/2 stream 1 (take_upgraded)
  bool first_byte_seen = false;
};

struct HttpRequestHead {
  std::string_view method;
  std::string_view target;       // as written: origin-form "/p?q" or absolute-form "http://h/p"
  std::string_view host;         // Host header value, empty when absent
  uint64_t program_span_id = 0;  // parent id of a traceparent header the program wrote itself, else 0
};

class HttpClientSink {
 public:
  virtual ~HttpClientSink() = default;
  // A request head was written completely. Values are only valid during the call.
  virtual void on_request(HttpCall& call, const HttpRequestHead& head) = 0;
  // The first byte of the response to `call` was read.
  virtual void on_first_byte(HttpCall& call) = 0;
  // The call ended: its final response was read completely (error empty), or the connection ended or
  // the tracker gave up first (error says why; status may still be known).
  virtual void on_response(HttpCall& call, std::string_view error) = 0;
};

class HttpClientTracker {
 public:
  static constexpr size_t kNoInsert = static_cast<size_t>(-1);
  static constexpr size_t kMaxOutstanding = 8;  // pipelined requests awaiting their responses

  // True once the connection was found not to be HTTP (or turned into a tunnel): the glue can skip it.
  bool opaque() const { return opaque_; }
  // The connection is not HTTP/1.x (it is followed by another tracker, or by nothing any more).
  void make_opaque() { opaque_ = true; }

  // Where to insert a header line into `buf`, the bytes the program offers to write next: right after
  // the '\n' that ends the request line, when that '\n' is in buf; kNoInsert when buf holds no such
  // point, or when the part of the head in buf already has a traceparent header. *own (when given):
  // bit 0 the head in buf has a tracestate header of the program's, bit 1 a baggage header (they are
  // then not inserted: tracecontext/context.h kOwnTraceState, kOwnBaggage). Does not change state.
  size_t insert_point(const char* buf, size_t n, unsigned* own = nullptr) const;

  // The kernel accepted these `n` bytes of the program's (inserted bytes not included). `span_id` is
  // the id the glue put into a header inserted in this request, or 0.
  void on_sent(const char* buf, size_t n, HttpClientSink& sink, uint64_t inserted_span_id = 0);
  // The program wrote n bytes the agent cannot see (sendfile): fine as a Content-Length body, otherwise
  // the connection can no longer be followed.
  void on_sent_opaque(uint64_t n, HttpClientSink& sink);
  // The program read these bytes from the socket. Returns how many were HTTP/1.x: fewer than n only when
  // a 101 answered an `Upgrade: h2c` request — the rest are the server's HTTP/2 frames.
  size_t on_received(const char* buf, size_t n, HttpClientSink& sink);
  // After a 101 to an `Upgrade: h2c` request (RFC 7540 §3.2): the request's call, still open (its
  // response comes on HTTP/2 stream 1), is moved to *out once; the tracker is then opaque.
  bool take_upgraded(HttpCall* out);
  // The peer closed (read returned 0), a read failed, or the program closed the socket: ends every
  // outstanding call. `error` is empty for an orderly end of stream.
  void on_end(HttpClientSink& sink, std::string_view error = {});

  size_t outstanding() const { return count_; }
  // True between the first byte of a request and the end of its head and body.
  bool request_in_progress() const { return req_ != Req::kIdle; }

 private:
  enum class Req : uint8_t { kIdle, kLine, kHeaders, kBodyLength, kBodyChunked };
  enum class Resp : uint8_t { kStatus, kHeaders, kBodyLength, kBodyChunked, kBodyToEof };
  enum class Chunk : uint8_t { kSize, kData, kDataEnd, kTrailer };

  // Chunked-body decoder shared by both directions: consumes bytes, returns how many, sets done.
  struct ChunkState {
    Chunk phase = Chunk::kSize;
    uint64_t remaining = 0;
    bool size_digits = false, size_ext = false, size_bad = false, line_nonempty = false;
    size_t feed(const char* p, size_t n, bool& done);
  };

  // Appends to a header line being collected (kept up to kMaxLine bytes; the rest is counted only).
  static constexpr size_t kMaxLine = 4096;
  static void collect(std::string& line, const char* p, size_t n);

  size_t sent_request(const char* p, size_t n, HttpClientSink& sink);
  void request_line(HttpClientSink& sink);
  void request_head_done(HttpClientSink& sink);
  size_t received_response(const char* p, size_t n, HttpClientSink& sink);
  void response_line(HttpClientSink& sink);
  void response_head_done(HttpClientSink& sink);
  void finish_oldest(HttpClientSink& sink, std::string_view error);
  void give_up(HttpClientSink& sink, std::string_view error);
  HttpCall* newest() { return count_ ? &calls_[(head_ + count_ - 1) % kMaxOutstanding] : nullptr; }
  HttpCall* oldest() { return count_ ? &calls_[head_] : nullptr; }

  bool opaque_ = false;

  // Request side (bytes written).
  Req req_ = Req::kIdle;
  std::string req_line_;            // the line being collected
  std::string method_, target_, host_;
  uint64_t program_span_ = 0;
  uint64_t inserted_span_ = 0;      // span id of a header inserted into the head in progress
  uint64_t req_bytes_ = 0;          // bytes of the current request before its call exists
  uint64_t req_body_left_ = 0;
  bool req_chunked_ = false;
  ChunkState req_chunk_;

  // Response side (bytes read).
  Resp resp_ = Resp::kStatus;
  std::string resp_line_;
  int resp_status_ = 0;
  bool resp_chunked_ = false, resp_has_length_ = false;
  uint64_t resp_body_left_ = 0;
  ChunkState resp_chunk_;

  HttpCall calls_[kMaxOutstanding];
  size_t head_ = 0, count_ = 0;
  bool req_upgrade_h2c_ = false;  // the head being written asks for Upgrade: h2c
  bool upgraded_ = false;         // upgraded_call_ waits for take_upgraded()
  HttpCall upgraded_call_;
};

// Builds the URL of a call for its step text: "scheme://host[:port]/path?k=?&…", redacted by policy
// `p` (core/redact.h: query values, a userinfo password, path segments a template names). `target`
// may already be absolute-form. When the request had no Host header, `fallback_host` (the peer
// address) is used. Fragments never reach the wire.
std::string http_call_url(std::string_view scheme, std::string_view host, std::string_view target,
                          std::string_view fallback_host, const redact::Policy& p = redact::policy());

// True when buf starts like an HTTP/1.x request (a known method followed by a space), or could still
// become one (a prefix of such a method shorter than it). Used to decide quickly whether to track.
bool looks_like_http_request(const char* buf, size_t n);

}  // namespace txray
