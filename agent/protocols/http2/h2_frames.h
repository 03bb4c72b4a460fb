// HTTP/2 frames of one direction of one connection, read incrementally (RFC 9113), with header blocks
// decoded by libnghttp2's HPACK inflater (linked statically into the agent, its symbols hidden: see
// agent/CMakeLists.txt). Used for both ends: inbound connections (h2_conn.h) and the program's client
// connections (http_out.cpp).
//
// What is kept: the 9-byte frame header being read, the header block of a HEADERS(+CONTINUATION)
// sequence (at most kMaxHeaderBlock bytes), the first bytes of RST_STREAM. DATA and every other frame
// are counted and skipped. Anything that cannot be a well-formed HTTP/2 stream — a lost preface, a
// frame that breaks the framing rules, a header block the inflater refuses or that is too large, a
// connection joined in the middle — makes the reader give up for good (dead()): the connection is then
// not followed any further, and nothing the program does is affected. Because HPACK's dynamic table
// needs every header block of the connection in order, nothing after a skipped block could be trusted.
//
// Pure: no I/O, no locks; allocation only for header blocks and decoded fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct nghttp2_hd_inflater;

namespace txray::h2 {

constexpr std::string_view kPreface{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24};
constexpr size_t kFrameHeader = 9;
constexpr size_t kMaxHeaderBlock = 64 * 1024;  // a larger field block gives the connection up
constexpr size_t kMaxFields = 256;

enum FrameType : uint8_t {
  DATA = 0,
  HEADERS = 1,
  PRIORITY = 2,
  RST_STREAM = 3,
  SETTINGS = 4,
  PUSH_PROMISE = 5,
  PING = 6,
  GOAWAY = 7,
  WINDOW_UPDATE = 8,
  CONTINUATION = 9,
};
enum Flags : uint8_t { END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIORITY_FLAG = 0x20 };

// How the first bytes of a connection compare with the client preface: 1 = they start with it, 0 = they
// are a prefix of it (more bytes needed), -1 = not HTTP/2 prior knowledge.
int match_preface(const char* p, size_t n);

struct Field {
  std::string name;
  std::string value;
};

struct HeaderList {
  std::vector<Field> fields;
  // The value of the first field called `name` (lower case, as HTTP/2 requires), else empty.
  std::string_view get(std::string_view name) const;
  bool has(std::string_view name) const;
};

// What a reader reports. `wire` = the frame bytes of the header block (headers + continuations).
class Handler {
 public:
  virtual ~Handler() = default;
  virtual void on_headers(uint32_t stream, const HeaderList& h, bool end_stream, size_t wire) = 0;
  virtual void on_data(uint32_t stream, size_t len, bool end_stream) = 0;
  virtual void on_reset(uint32_t stream, uint32_t error_code) = 0;
};

class FrameReader {
 public:
  FrameReader() = default;
  ~FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  // A new connection: `preface` = the client preface comes first (the client's direction).
  void reset(bool preface);
  // Bytes of this direction, in order. Returns false once the connection is given up.
  bool feed(const char* p, size_t n, Handler& h);
  bool dead() const { return state_ == State::dead; }
  // Gives the connection up from outside (the other direction did).
  void stop() { die(); }
  // Bytes fed so far (the stream offset of the next byte).
  uint64_t offset() const { return offset_; }

  // For header insertion: how many bytes come before the next frame header — the rest of the frame (or
  // of the client preface) being read; 0: the next byte starts a frame header — or -1 when that cannot
  // be said (inside a frame header, or dead).
  int64_t frame_remaining() const;
  // Inside a frame header (frame_remaining() is -1 then): copies the bytes of it read so far to out and
  // returns how many (1-8); else 0.
  size_t partial_header(uint8_t out[kFrameHeader]) const;

  // Decodes a complete HEADERS frame's header block ahead of feed(), for a frame that starts at stream
  // offset `at` (the bytes `frame`, header and payload, END_HEADERS set): the fields, and the offset in
  // the frame just past the last pseudo-header field (0 when none or no regular field follows).
  // The result is kept, and feed() uses it for that frame instead of decoding the block again (HPACK's
  // dynamic table must see each block once, in order): the caller must decode ahead every HEADERS frame
  // between offset() and `at` first. A second call for the same offset returns the kept result.
  // False when the frame is not such a frame, is out of order, or too many are kept (or the inflater
  // refuses it: the reader is then dead).
  static constexpr size_t kMaxAhead = 64;
  bool decode_ahead(uint64_t at, const char* frame, size_t len, const HeaderList** fields, size_t* pseudo_end);

 private:
  enum class State : uint8_t { preface, header, payload, dead };
  bool frame_done(Handler& h);
  bool decode_block(const char* p, size_t n, HeaderList* out, size_t* pseudo_end);
  bool die();

  State state_ = State::dead;
  uint64_t offset_ = 0;
  size_t preface_seen_ = 0;
  uint8_t hdr_[kFrameHeader];
  size_t hdr_len_ = 0;
  uint32_t len_ = 0;     // payload length of the current frame
  uint32_t got_ = 0;     // payload bytes of it read so far
  uint8_t type_ = 0;
  uint8_t flags_ = 0;
  uint32_t stream_ = 0;
  uint64_t frame_at_ = 0;  // stream offset of the current frame's header
  // A HEADERS (or PUSH_PROMISE) sequence waiting for its CONTINUATIONs.
  bool in_block_ = false;
  bool block_push_ = false;
  bool block_end_stream_ = false;
  uint32_t block_stream_ = 0;
  size_t block_wire_ = 0;
  std::string block_;
  uint8_t small_[8];  // RST_STREAM's error code
  nghttp2_hd_inflater* inflater_ = nullptr;
  HeaderList fields_;
  // decode_ahead's results, in stream order.
  struct Ahead {
    uint64_t at = 0;
    size_t pseudo_end = 0;
    HeaderList fields;
  };
  std::vector<Ahead> ahead_;
};

}  // namespace txray::h2
