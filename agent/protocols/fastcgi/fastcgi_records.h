// FastCGI 1.0 records (the FastCGI Specification, 1996; what nginx's fastcgi_pass and php-fpm speak),
// parsed as they pass by, split anywhere: bytes in, facts out, no I/O, bounded state.
//
//   record  = version(1) type(1) requestId(2, big-endian) contentLength(2) paddingLength(1) reserved(1)
//             content[contentLength] padding[paddingLength]
//   PARAMS and STDIN/STDOUT/STDERR are streams of records per request id, ended by an empty record;
//   PARAMS' content is name-value pairs, each length 1 byte (< 128) or 4 bytes (high bit set).
//
// RecordReader cuts a byte stream into records; NameValueReader cuts a PARAMS stream into pairs, keeping
// only what its caller wants of each value; CgiStatus finds the `Status:` line of the CGI response head
// an application writes on STDOUT. Anything that breaks the format (a version other than 1, a length past
// its bounds) makes the reader dead for good: the caller stops following the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txray::fcgi {

enum RecordType : uint8_t {
  kBeginRequest = 1,
  kAbortRequest = 2,
  kEndRequest = 3,
  kParams = 4,
  kStdin = 5,
  kStdout = 6,
  kStderr = 7,
  kData = 8,
  kGetValues = 9,
  kGetValuesResult = 10,
  kUnknownType = 11,
};
constexpr uint8_t kKeepConn = 1;       // FCGI_KEEP_CONN in BEGIN_REQUEST's flags
constexpr uint16_t kResponder = 1;     // the role nginx asks for
constexpr size_t kHeaderLen = 8;

struct Header {
  uint8_t type = 0;
  uint16_t id = 0;
  uint16_t content = 0;
  uint8_t padding = 0;
};

// Reads a record header from 8 bytes; false when its version is not 1 or its type is not one of 1..11.
bool parse_header(const char* p, Header* h);
void put_header(char* out, uint8_t type, uint16_t id, uint16_t content, uint8_t padding);

// The first bytes a server reads from a connection: +1 they start a FastCGI BEGIN_REQUEST (version 1,
// type 1, content length 8, role 1..3: 10 bytes needed) or GET_VALUES record (its 8-byte header), 0 too
// few bytes to tell (a consistent prefix), -1 not FastCGI. What a client writes first is the same record: the outbound
// dispatch asks looks_like_request() (fastcgi_client.h), which is this.
int looks_like_begin(const char* p, size_t n);

// Cuts a stream into records. feed() calls the sink for every record header, every piece of content (in
// order, as split by the caller's pieces) and every record end (after its padding).
class RecordReader {
 public:
  struct Sink {
    virtual void on_header(const Header& h) = 0;
    virtual void on_content(const Header& h, const char* p, size_t n) = 0;
    virtual void on_record_end(const Header& h) = 0;
    // n bytes of the current record's content went by unseen (skip()).
    virtual void on_skipped(const Header& /*h*/, size_t /*n*/) {}
  };
  void reset();
  // False once the stream is not FastCGI (dead(): nothing more is read).
  bool feed(const char* p, size_t n, Sink& sink);
  // Content the caller cannot see — nginx sends a request body it buffered in a file with sendfile(),
  // the record's header and padding by write() around it: n bytes of the current STDIN or DATA record's
  // content, counted and not read. False (nothing done) unless such a record's header was read and n
  // fits in what is left of its content.
  bool skip(size_t n, Sink& sink);
  bool dead() const { return dead_; }
  // Between records (nothing of a record read yet).
  bool at_boundary() const { return have_ == 0 && !in_record_; }
  // Bytes fed so far (what a sink's callback has been given is before this offset).
  uint64_t offset() const { return total_; }

 private:
  char hdr_[kHeaderLen];
  size_t have_ = 0;       // header bytes collected
  bool in_record_ = false;
  Header cur_;
  uint32_t content_left_ = 0;
  uint32_t padding_left_ = 0;
  bool dead_ = false;
  uint64_t total_ = 0;
};

// Cuts the content of one PARAMS stream into name-value pairs, split anywhere. Names longer than
// kMaxName are never wanted (none of the CGI variables the agent reads is); a wanted value is kept up to
// kMaxValue bytes (`truncated` says when it was longer).
class NameValueReader {
 public:
  static constexpr size_t kMaxName = 48;
  static constexpr size_t kMaxValue = 4096;
  struct Sink {
    // Whether the value of this name is to be kept (asked once its name is complete).
    virtual bool wanted(std::string_view name) = 0;
    virtual void on_pair(std::string_view name, std::string_view value, bool truncated) = 0;
  };
  void reset();
  // False when a length is past 2^31 - 1 (the high bit is the 4-byte marker) — never otherwise.
  bool feed(const char* p, size_t n, Sink& sink);
  // True when the stream so far ends exactly at a pair's end (what an empty PARAMS record should meet).
  bool complete() const { return state_ == State::name_len && got_ == 0; }

 private:
  enum class State : uint8_t { name_len, value_len, name, value };
  State state_ = State::name_len;
  uint8_t lenbuf_[4];
  size_t got_ = 0;         // bytes of the current length
  uint32_t name_len_ = 0, value_len_ = 0;
  uint32_t left_ = 0;      // bytes left of the name / value
  bool keep_ = false;
  bool truncated_ = false;
  std::string name_, value_;
  void name_done(Sink& sink);
};

// Reads the CGI response head an application writes at the start of its STDOUT stream (RFC 3875 §6):
// header lines until an empty line; `Status: NNN reason` sets the status (200 without one). Lines longer
// than kMaxLine are skipped (they cannot be Status lines); a head longer than kMaxHead ends the search.
class CgiStatus {
 public:
  static constexpr size_t kMaxLine = 256;
  static constexpr size_t kMaxHead = 16 * 1024;
  void reset();
  // Consumes STDOUT content bytes (all of them: only the head is looked at).
  void feed(const char* p, size_t n);
  bool head_done() const { return done_; }
  int status() const { return status_; }

 private:
  std::string line_;
  size_t seen_ = 0;
  bool skip_line_ = false;
  bool done_ = false;
  int status_ = 200;
  void on_line();
};

// Appends a name-value pair in FastCGI's encoding (1-byte lengths below 128, else 4 bytes).
void append_pair(std::string& out, std::string_view name, std::string_view value);
size_t pair_len(size_t name_len, size_t value_len);

}  // namespace txray::fcgi
