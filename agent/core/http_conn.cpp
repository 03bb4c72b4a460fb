#include "http_conn.h"

#include <cstdio>

#include "attribution.h"
#include "traceparent.h"
#include "transaction.h"

namespace txray {

void HttpConn::reset(std::string_view client, int fd_) {
  if (tx) on_close();  // the previous connection on this number ended unseen: its request ends now
  client_addr.assign(client);
  fd = fd_;
  seq = 0;
  buf.clear();
  scanned = 0;
  watching = true;
  req_body.reset(http::BodyFramer::Mode::none);
  tx = nullptr;
  resp.reset(false);
}

void HttpConn::on_read(const char* p, size_t n) {
  if (!watching || n == 0) return;
  if (!req_body.done()) {
    size_t used = req_body.feed(p, n);
    if (tx) {
      tx->bytes_read += used;
      ++tx->io_calls;
    }
    p += used;
    n -= used;
    if (n == 0) return;
  }
  if (buf.size() + n > http::kMaxHead) {
    // A head this large (or many pipelined requests waiting) is not followed: stop watching.
    watching = false;
    buf.clear();
    return;
  }
  buf.append(p, n);
  try_begin();
}

void HttpConn::try_begin() {
  while (watching && !tx && !buf.empty()) {
    int looks = http::looks_like_request(buf);
    if (looks < 0) {
      watching = false;
      buf.clear();
      return;
    }
    size_t end = http::find_head_end(buf, scanned);
    scanned = buf.size();
    if (looks == 0 || end == 0) return;
    http::RequestHead head;
    if (!http::parse_request_head(std::string_view(buf).substr(0, end), &head)) {
      watching = false;
      buf.clear();
      return;
    }
    std::string name = head.method + " " + head.path;
    tx = tx::begin(name, "http");
    tx->client_addr = client_addr;
    tx->bytes_read = end;
    if (!head.query.empty()) tx->attrs.push_back({"query", head.query.substr(0, 1024)});
    if (!head.host.empty()) tx->attrs.push_back({"host", head.host.substr(0, 256)});
    if (!head.user_agent.empty()) tx->attrs.push_back({"user_agent", head.user_agent});
    if (!head.traceparent.empty()) {
      // The one parser of the value (traceparent.h), which follows the spec's rules for receivers.
      TraceParent tp;
      if (parse_traceparent(head.traceparent, tp)) {
        for (int i = 0; i < 16; ++i) tx->trace_id[i] = tp.trace_id[i];
        tx->parent_span_id = tp.parent_id;
      }
    }
    ++seq;
    attr::request_began(tx, fd);
    resp.reset(head.method == "HEAD");
    if (head.chunked) req_body.reset(http::BodyFramer::Mode::chunked);
    else if (head.content_length > 0) req_body.reset(http::BodyFramer::Mode::length, uint64_t(head.content_length));
    else req_body.reset(http::BodyFramer::Mode::none);
    // What followed the head in the same read: this request's body, then possibly the next request.
    size_t used = req_body.feed(buf.data() + end, buf.size() - end);
    tx->bytes_read += used;
    buf.erase(0, end + used);
    scanned = 0;
  }
}

void HttpConn::on_write(const char* p, size_t n) {
  if (tx) ++tx->io_calls;
  while (tx && n > 0) {
    size_t used = resp.feed(p, n);
    tx->bytes_written += used;
    p += used;
    n -= used;
    if (!resp.done()) return;
    finish(resp.status(), nullptr);
    // Anything written after a complete response belongs to the next (pipelined) request's response.
  }
}

void HttpConn::on_write_opaque(uint64_t n) {
  if (!tx) return;
  tx->bytes_written += n;
  ++tx->io_calls;
  resp.feed_opaque(n);
  if (resp.done()) finish(resp.status(), nullptr);
}

void HttpConn::on_close() {
  // First: finish() begins the next pipelined request, and none may begin on a closed connection (it
  // was never ended: a leaked transaction per close; found by agent.fuzz_http_inbound).
  watching = false;
  buf.clear();
  if (tx) {
    if (resp.until_close()) finish(resp.status(), nullptr);
    else finish(resp.status(), "connection closed before the response was complete");
  }
}

void HttpConn::finish(int status, const char* error) {
  Transaction* t = tx;
  tx = nullptr;
  char msg[32];
  if (!error && status >= 500) {
    std::snprintf(msg, sizeof msg, "HTTP %d", status);
    error = msg;
  }
  tx::end(t, status, error ? error : "");
  try_begin();
}

}  // namespace txray
