// RESP2/RESP3 read incrementally, a byte at a time if need be, with bounded state: the commands a client
// writes (arrays of bulk strings) and the frames a server answers. Bulk payloads are skipped by their
// length, never kept: a command keeps the heads of its first three arguments (the name, the key, a
// subcommand), a frame the head of its line or of its first element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace txray::redis {

// A bounded copy of the start of a string.
template <size_t N>
struct Head {
  char b[N];
  size_t len = 0;       // bytes kept (<= N)
  uint64_t full = 0;    // the string's real length
  void clear() { len = 0, full = 0; }
  void add(const char* p, size_t n) {
    full += n;
    size_t k = n < N - len ? n : N - len;
    memcpy(b + len, p, k);
    len += k;
  }
  bool cut() const { return full > len; }
};

// A command the program writes: `*<n>\r\n` then n times `$<len>\r\n<bytes>\r\n`. Empty lines between
// commands ("\r\n", "\n": inline commands the server skips without a reply) are no command's bytes.
class CommandReader {
 public:
  enum class Ev : uint8_t { none, start, done, bad };
  // Reads from p[0..n) up to the next event and says how much it used (*ev: start = the command's first
  // byte was just read, done = its last byte; bad = not RESP: nothing more may be fed).
  size_t feed(const char* p, size_t n, Ev* ev);
  void reset() { *this = CommandReader{}; }

  int64_t args = 0;        // of the command read (or being read)
  Head<32> arg[3];         // name, key (or subcommand), third argument
  Head<256> key;           // the second argument with more room (keys are long)
  uint64_t bytes = 0;      // of the command so far

 private:
  enum class St : uint8_t { idle, blank, count, bulk_len, data, crlf };  // blank: after an empty line's '\r'
  St st_ = St::idle;
  char line_[24];
  size_t line_len_ = 0;
  int64_t left_ = 0;       // arguments still to read
  int64_t index_ = 0;      // the argument being read
  uint64_t data_left_ = 0;
  uint8_t crlf_ = 0;
};

// A frame the server writes. RESP2: + - : $ *. RESP3 adds _ , # ( = ! % ~ | >; an attribute (`|`) is
// part of the frame that follows it.
struct Frame {
  char kind = 0;              // type byte of the frame's value ('>' a push)
  bool null = false;          // $-1, *-1, _
  int64_t elements = -1;      // of an aggregate
  Head<160> line;             // a simple string's or error's text, the start of a blob error
  Head<24> first;             // an aggregate's first element when a string
  int64_t third = 0;          // an aggregate's third element when an integer (pub/sub counts)
  uint64_t bytes = 0;
};

class FrameReader {
 public:
  static constexpr int kMaxDepth = 64;
  enum class Ev : uint8_t { none, frame, bad };
  // Reads p[0..n) up to the end of the next frame (*ev = frame: `frame()` is it) and says how much it used.
  size_t feed(const char* p, size_t n, Ev* ev);
  const Frame& frame() const { return f_; }
  void reset() { *this = FrameReader{}; }

 private:
  enum class St : uint8_t { type, line, data, crlf };
  bool on_line();           // a whole line read: false = not RESP; done_ = the frame is complete
  bool value_done(bool attribute);  // true: the top-level frame is complete
  struct Level {
    int64_t left;
    int64_t index;
    bool attribute;
  };
  St st_ = St::type;
  char type_ = 0;
  char line_[160];
  size_t line_len_ = 0;
  uint64_t line_full_ = 0;
  bool prev_cr_ = false;
  bool done_ = false;
  uint64_t data_left_ = 0;
  uint8_t crlf_ = 0;
  int capture_ = 0;         // what the bulk being read is kept as: 0 nothing, 1 line, 2 first
  Level stk_[kMaxDepth];
  int depth_ = 0;
  bool fresh_ = true;       // the next value starts a new frame
  Frame f_;
};

// Parses an optional '-' and decimal digits (at most 18); false otherwise.
bool parse_int(const char* p, size_t n, int64_t* out);

}  // namespace txray::redis
