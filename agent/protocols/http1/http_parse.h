// HTTP/1.x parsing for the inbound tracker: request heads, response heads and message-body framing
// (Content-Length, chunked, until close). Pure functions and small state machines: no I/O, no clocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txray::http {

constexpr size_t kMaxHead = 16 * 1024;  // request/response heads larger than this are not tracked

// Where the end of a head ("\r\n\r\n" or "\n\n") is in buf: the offset just past it, or 0 when not yet
// there. `from` = where to resume scanning (bytes before it were scanned already).
size_t find_head_end(std::string_view buf, size_t from);

// Whether buf can be the start of an HTTP/1.x request: "TOKEN SP target SP HTTP/1.x" (so far).
// Returns +1 = yes (whole request line seen), 0 = can't tell yet, -1 = not HTTP/1.x.
int looks_like_request(std::string_view buf);

// Views into the head that was parsed (no copies): valid while it is.
struct RequestHead {
  std::string_view method;
  std::string_view path;   // target without the query string
  std::string_view query;  // after '?', without it
  std::string_view host, user_agent, traceparent;
  // The first tracestate and baggage lines; how many lines of the three there were (counts stop at 255).
  // Further lines are found again by header_lines() (rare: only then is the head scanned twice).
  std::string_view tracestate, baggage;
  uint8_t traceparents = 0, tracestates = 0, baggages = 0;
  int64_t content_length = -1;  // -1 when absent
  bool chunked = false;
  bool keep_alive = true;       // HTTP/1.1 default; "Connection: close" or HTTP/1.0 without keep-alive
  bool upgrade_h2c = false;     // "Upgrade: h2c" (RFC 7540 §3.2): a 101 answer switches to HTTP/2
};
// Parses a complete request head. False when it is not a valid HTTP/1.x request head.
bool parse_request_head(std::string_view head, RequestHead* out);
// The same on bytes that begin with a request head (and may hold more after it), in the same pass as
// finding its end: returns find_head_end(data, 0) (0: no whole head, *out not to be used), and *ok is
// what parse_request_head(data.substr(0, end)) returns (one pass over the head, not two).
size_t parse_request(std::string_view data, RequestHead* out, bool* ok);

// The values (trimmed) of every line of header `lower_name` (lowercase) in a request head, in order, up
// to max of them; returns how many there are (may be more than max).
size_t header_lines(std::string_view head, std::string_view lower_name, std::string_view* out, size_t max);

struct ResponseHead {
  int status = 0;
  int64_t content_length = -1;
  bool chunked = false;
  bool close = false;  // "Connection: close"
};
bool parse_response_head(std::string_view head, ResponseHead* out);

// Counts the bytes of one message body as it passes by, in pieces of any size.
class BodyFramer {
 public:
  enum class Mode : uint8_t { none, length, chunked, until_close };
  void reset(Mode m, uint64_t length = 0);
  // Consumes body bytes from p[0..n); returns how many belong to this body (the rest is what follows).
  size_t feed(const char* p, size_t n);
  // Bytes whose content is not visible (sendfile): counted as body data. False if the framer can't
  // account for them (inside chunk framing), after which it counts until close.
  bool feed_opaque(uint64_t n);
  bool done() const { return done_; }
  Mode mode() const { return mode_; }

 private:
  enum class Chunk : uint8_t { size, ext, size_lf, data, data_cr, data_lf, trailer_start, trailer, trailer_lf,
                               final_lf };
  Mode mode_ = Mode::none;
  bool done_ = true;
  uint64_t remaining_ = 0;
  Chunk chunk_ = Chunk::size;
  bool size_digits_ = false;
};

// Follows one response as it is written, in pieces of any size: head (1xx heads are skipped), then its
// body. HEAD requests and 204/304 responses have no body; 101 ends the response at its head.
class ResponseTracker {
 public:
  void reset(bool head_request);
  // Consumes written bytes; returns how many belong to this response.
  size_t feed(const char* p, size_t n);
  void feed_opaque(uint64_t n);
  bool done() const { return done_; }
  bool head_done() const { return head_done_; }
  bool until_close() const { return head_done_ && body_.mode() == BodyFramer::Mode::until_close; }
  int status() const { return head_.status; }
  bool gave_up() const { return gave_up_; }

 private:
  std::string buf_;
  size_t scanned_ = 0;
  ResponseHead head_;
  BodyFramer body_;
  bool head_request_ = false;
  bool head_done_ = false;
  bool done_ = false;
  bool gave_up_ = false;  // head not understood: the response ends when the connection closes
};

}  // namespace txray::http
