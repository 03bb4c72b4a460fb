// Outbound HTTP/2 on one client connection the program opened (h2c with prior knowledge; TLS with ALPN
// h2 through the SSL hooks): each stream the program opens is a call, however many are in flight.
//
// Pure core like HttpClientTracker (http_client.h): the glue (http_out.cpp) feeds the bytes the kernel
// accepted and the bytes the program read, and turns the callbacks into rows. A call begins with the
// request's HEADERS (the program's bytes), its first response byte is the response's first frame on
// the stream, and it ends with the response's END_STREAM, a RST_STREAM either way, or the connection's
// end. gRPC calls (content-type application/grpc*) carry grpc-status / grpc-message from the trailers.
//
// traceparent insertion (plan_insert()) : into a HEADERS frame the program writes, as an HPACK literal
// header field *without indexing* (RFC 7541 §6.2.2: the peer's dynamic table is left as it is), placed
// right after the last pseudo-header field — so that the program's own bytes of the frame still follow
// it and the program always writes again (see http_inject.h for the byte accounting).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <sys/uio.h>

#include "protocols/http2/h2_frames.h"
#include "protocols/tracecontext/context.h"
#include "core/recorder.h"

namespace txray {

// The bytes of a write spread over iovecs, read by offset (copies only what is asked for).
struct IoBytes {
  const iovec* iov = nullptr;
  int cnt = 0;
  size_t len = 0;  // total
  // Copies [off, off + n) into dst; false when beyond len.
  bool copy(size_t off, size_t n, char* dst) const;
};

struct H2Call {
  StepRef step;
  uint32_t stream = 0;          // 0: slot free
  uint64_t span_id = 0;         // the span id sent in traceparent (inserted or the program's), else 0
  bool announced = false;       // on_request was called
  bool grpc = false;
  bool first_byte_seen = false;
  bool response_headers = false;
  uint64_t request_bytes = 0;   // program bytes of the stream's frames (inserted bytes not counted)
  uint64_t response_bytes = 0;
  int status = 0;               // :status
  int grpc_status = -1;         // -1: none seen
  std::string grpc_message;     // percent-decoded
};

class H2CallSink {
 public:
  virtual ~H2CallSink() = default;
  virtual void on_request(H2Call& c, const h2::HeaderList& h) = 0;
  virtual void on_first_byte(H2Call& c) = 0;
  virtual void on_response(H2Call& c, std::string_view error) = 0;
};

class H2Client {
 public:
  static constexpr size_t kMaxCalls = 256;
  // The largest field block the agent inserts (traceparent 69 bytes, tracestate and baggage as long as
  // tracecontext/context.h allows): a HEADERS frame gets the fields only when they fit in it.
  static constexpr size_t kMaxInsert = kMaxContextFields;

  void reset();
  // After a 101 to an HTTP/1.1 `Upgrade: h2c` request (RFC 7540 §3.2): a fresh state whose stream 1 is
  // that request's call `c` (announced, its row open); the program's preface comes next, the server's
  // frames follow the 101 at once.
  void reset_upgraded(const H2Call& c);
  bool dead() const { return out_.dead() || in_.dead(); }
  void on_sent(const char* p, size_t n, H2CallSink& sink);
  void on_received(const char* p, size_t n, H2CallSink& sink);
  void on_end(H2CallSink& sink, std::string_view error);

  // Where to insert traceparent fields into the bytes the program offers to write next (buf, len; it
  // starts at the offset the out direction has reached): for each complete HEADERS frame (END_HEADERS,
  // no CONTINUATION, a regular field after the pseudo-headers, room for the field within the default
  // frame size) of a stream with no traceparent of its own, up to `max` of them: the offset in buf of
  // the frame's start (where its 3-byte length must grow by the field's size) and of the insertion
  // point, and the stream id. Decodes those header blocks ahead (FrameReader::decode_ahead), so it is
  // called before the write and each frame is decoded once however often the write is retried.
  struct Insert {
    size_t frame_at;   // offset in buf of the frame header
    size_t at;         // offset in buf of the insertion point
    uint32_t stream;
    uint32_t frame_len;  // the frame's payload length as the program wrote it
    unsigned own = 0;    // the program's own trace fields (context.h: kOwnTraceState, kOwnBaggage, kOwnTraceParent)
    uint64_t program_span = 0;  // kOwnTraceParent: the parent id of the program's traceparent
  };
  size_t plan_insert(const struct IoBytes& buf, std::string& scratch, Insert* out, size_t max);
  // The glue put a traceparent with this span id into the stream's HEADERS: remembered for its call.
  void note_span(uint32_t stream, uint64_t span_id);

  size_t open_calls() const;

 private:
  class OutSide;
  class InSide;
  friend class OutSide;
  friend class InSide;
  H2Call* find(uint32_t stream);
  H2Call* take(uint32_t stream);
  void finish(H2Call& c, H2CallSink& sink, std::string_view error);

  h2::FrameReader out_;  // the program's frames (requests)
  h2::FrameReader in_;   // the server's (responses)
  H2Call calls_[kMaxCalls];
  size_t used_ = 0;
};

// The HPACK encoding of "traceparent: <value>" as a literal field without indexing, new name
// (0x00, name length, name, value length, value; no Huffman coding). Returns its length, 0 when cap is
// too small.
size_t hpack_traceparent(const uint8_t trace_id[16], uint64_t span_id, char* out, size_t cap);

// gRPC's status name and the error text of a failed call ("grpc-status 13 INTERNAL: message").
std::string grpc_error_text(int status, std::string_view message);
std::string grpc_unescape(std::string_view v);

}  // namespace txray
