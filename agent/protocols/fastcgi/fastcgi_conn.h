// Inbound FastCGI over one accepted connection (php-fpm and any FastCGI application, TCP or Unix socket):
// a transaction per request id, multiplexed ids on one connection too.
//
// HttpConn (http_conn.h) hands the connection over when its first bytes are a FastCGI BEGIN_REQUEST
// record (fastcgi_records.h: looks_like_begin). The bytes the program reads are the web server's records
// (BEGIN_REQUEST, PARAMS, STDIN, ABORT_REQUEST), the bytes it writes the application's (STDOUT, STDERR,
// END_REQUEST); each direction has its own record reader.
//   - BEGIN_REQUEST begins the request's transaction (kind "http", attribute protocol=fastcgi), which
//     becomes the reading thread's request (attribution.h: a php-fpm worker serves one request at a time,
//     so its libpq, libcurl and socket steps are the request's);
//   - the end of PARAMS names it "REQUEST_METHOD path" (REQUEST_URI without its query, else SCRIPT_NAME),
//     the query is the attribute `query` (masked as HTTP's), HTTP_HOST / HTTP_USER_AGENT become `host` /
//     `user_agent`, and HTTP_TRACEPARENT / HTTP_TRACESTATE / HTTP_BAGGAGE are the caller's W3C trace
//     context (what a front such as nginx passes on from its request, or what the agent put into the
//     front's params: fastcgi_client.h);
//   - the `Status:` line of the CGI head on STDOUT is the status (200 without one), 5xx an error;
//   - END_REQUEST ends it (a protocol status other than REQUEST_COMPLETE is its error); the connection's
//     end before that ends it with an error. FCGI_KEEP_CONN: the connection carries the next request;
//   - bytes read / written: the STDIN and STDOUT content of the request.
// Records that break the format (another version, an unknown type) end the requests in flight and stop
// the following of the connection (counted: streams_unparsed). At most kMaxRequests ids are followed at
// once; a BEGIN_REQUEST past that is counted (internal_errors) and its request left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocols/fastcgi/cgi_vars.h"
#include "protocols/fastcgi/fastcgi_records.h"

namespace txray {

struct Transaction;

class FcgiServer {
 public:
  static constexpr size_t kMaxRequests = 16;

  void reset(std::string_view client, int fd);
  // Bytes the program read from / wrote to the connection. False once the connection is given up.
  bool on_read(const char* p, size_t n);
  bool on_write(const char* p, size_t n);
  // The connection ends: requests in flight end with an error.
  void on_close();
  // In a forked child: the requests in flight are the parent's (not ended here).
  void forget();
  // The request in flight with this txid (0: the one begun last), or nullptr.
  Transaction* request(uint64_t txid) const;
  bool busy() const { return open_ != 0; }
  bool dead() const { return dead_; }

 private:
  struct Req {
    uint16_t id = 0;  // 0: free slot
    Transaction* tx = nullptr;
    uint64_t seq = 0;  // order of BEGIN_REQUEST (request(0) is the newest)
    bool params_done = false;
    bool aborted = false;
    bool end_seen = false;
    uint8_t begin_body[3] = {};
    uint8_t begin_got = 0;
    uint32_t end_body_got = 0;
    uint8_t protocol_status = 0;
    fcgi::NameValueReader nv;
    fcgi::CgiStatus cgi;
    CgiVars vars;
  };
  struct ReadSink;
  struct WriteSink;
  friend struct ReadSink;
  friend struct WriteSink;

  Req* find(uint16_t id);
  void begin(uint16_t id);
  void params_done(Req& r);
  void finish(Req& r, const char* error);
  void give_up();

  std::string client_;
  int fd_ = -1;
  fcgi::RecordReader in_, out_;
  Req reqs_[kMaxRequests];
  size_t open_ = 0;
  uint64_t next_seq_ = 0;
  bool dead_ = false;
};

}  // namespace txray
