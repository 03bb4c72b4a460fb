// The uwsgi protocol (uWSGI's `--socket`, what nginx's uwsgi_pass and Apache's mod_proxy_uwsgi speak),
// parsed as it passes by, split anywhere: bytes in, facts out, no I/O, bounded state.
//
//   packet = modifier1(1) datasize(2, little-endian) modifier2(1) data[datasize]
//   modifier1 0 (a WSGI/CGI request): data is vars, each keysize(2, LE) key valsize(2, LE) value; the
//   request body (CONTENT_LENGTH bytes) follows the packet, and the application's answer is a raw
//   HTTP/1.x response on the same connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txray::uwsgi {

constexpr size_t kHeaderLen = 4;

// The first bytes a server reads from a connection (or a client writes to it): +1 a modifier1 0
// packet header with a datasize that holds at least one var, followed by a var whose key length is
// 1..64 and whose key starts like a CGI variable (an uppercase letter or '_'); 0 too few bytes to tell
// (a consistent prefix); -1 not uwsgi.
int looks_like_packet(const char* p, size_t n);

// Cuts one packet's header and vars out of a stream, split anywhere; what follows the vars is the
// caller's (the body). Wanted values are kept up to kMaxValue bytes.
class VarsReader {
 public:
  static constexpr size_t kMaxKey = 48;
  static constexpr size_t kMaxValue = 4096;
  struct Sink {
    virtual bool wanted(std::string_view key) = 0;
    virtual void on_var(std::string_view key, std::string_view value, bool truncated) = 0;
  };
  void reset();
  // Consumes bytes of the packet; returns how many were the packet's (the rest follows it). Sets done()
  // at the packet's end, dead() when it is not a modifier1 0 packet or a var overruns the datasize.
  size_t feed(const char* p, size_t n, Sink& sink);
  bool done() const { return state_ == State::done; }
  bool dead() const { return state_ == State::dead; }
  // The packet's 4-byte header was read (datasize() and modifier1() hold it).
  bool header_done() const { return state_ != State::header; }
  uint8_t modifier1() const { return uint8_t(hdr_[0]); }
  uint16_t datasize() const { return datasize_; }

 private:
  enum class State : uint8_t { header, key_len, key, value_len, value, done, dead };
  State state_ = State::header;
  char hdr_[kHeaderLen];
  size_t got_ = 0;
  uint8_t lenbuf_[2];
  uint32_t left_data_ = 0;  // datasize bytes left
  uint32_t left_ = 0;       // of the current key / value
  uint16_t datasize_ = 0;
  uint16_t key_len_ = 0;
  bool keep_ = false;
  bool truncated_ = false;
  std::string key_, value_;
};

// Appends a var in uwsgi's encoding (lengths up to 65535).
void append_var(std::string& out, std::string_view key, std::string_view value);

}  // namespace txray::uwsgi
