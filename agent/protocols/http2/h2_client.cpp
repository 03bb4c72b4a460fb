#include "protocols/http2/h2_client.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "protocols/tracecontext/traceparent.h"

namespace txray {

namespace {

int to_int(std::string_view v, int dflt) {
  if (v.empty() || v.size() > 9) return dflt;
  int r = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return dflt;
    r = r * 10 + (c - '0');
  }
  return r;
}

// gRPC status code names (grpc/status.h), for the error text.
const char* grpc_code_name(int c) {
  static const char* const kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                       "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                                       "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  return (c >= 0 && c <= 16) ? kNames[c] : "?";
}

}  // namespace

// gRPC's grpc-message is percent-encoded (PROTOCOL-HTTP2.md): decoded for the error text.
std::string grpc_unescape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size() && out.size() < 512; ++i) {
    if (v[i] == '%' && i + 2 < v.size()) {
      char hex[3] = {v[i + 1], v[i + 2], 0};
      char* end = nullptr;
      long c = strtol(hex, &end, 16);
      if (end == hex + 2) {
        out.push_back(char(c));
        i += 2;
        continue;
      }
    }
    out.push_back(v[i]);
  }
  return out;
}

// "grpc-status 13 INTERNAL: message" for a failed gRPC call or stream.
std::string grpc_error_text(int status, std::string_view message) {
  char head[64];
  std::snprintf(head, sizeof head, "grpc-status %d %s", status, grpc_code_name(status));
  std::string e = head;
  if (!message.empty()) {
    e += ": ";
    e += grpc_unescape(message);
  }
  return e;
}

class H2Client::OutSide final : public h2::Handler {
 public:
  OutSide(H2Client& c, H2CallSink& s) : c_(c), sink_(s) {}
  void on_headers(uint32_t id, const h2::HeaderList& h, bool, size_t wire) override {
    H2Call* call = c_.find(id);
    if (call && call->announced) {  // the request's trailers
      call->request_bytes += wire;
      return;
    }
    if (!call) call = c_.take(id);
    if (!call) return;
    call->announced = true;
    call->request_bytes += wire;
    call->grpc = h.get("content-type").substr(0, 16) == "application/grpc";
    if (!call->span_id) {
      // The program's own traceparent, if it wrote one: its parent id is this call's span.
      TraceParent tp;
      if (auto v = h.get("traceparent"); !v.empty() && parse_traceparent(v, tp)) call->span_id = tp.parent_id;
    }
    sink_.on_request(*call, h);
  }
  void on_data(uint32_t id, size_t len, bool) override {
    if (H2Call* call = c_.find(id)) call->request_bytes += h2::kFrameHeader + len;
  }
  void on_reset(uint32_t id, uint32_t code) override {
    if (H2Call* call = c_.find(id)) {
      char e[64];
      std::snprintf(e, sizeof e, "stream reset by the client (RST_STREAM %u)", code);
      c_.finish(*call, sink_, e);
    }
  }

 private:
  H2Client& c_;
  H2CallSink& sink_;
};

class H2Client::InSide final : public h2::Handler {
 public:
  InSide(H2Client& c, H2CallSink& s) : c_(c), sink_(s) {}
  void on_headers(uint32_t id, const h2::HeaderList& h, bool end_stream, size_t wire) override {
    H2Call* call = c_.find(id);
    if (!call || !call->announced) return;
    first_byte(*call);
    call->response_bytes += wire;
    if (!call->response_headers) {
      int st = to_int(h.get(":status"), 0);
      if (st >= 200 || st == 0) {
        call->response_headers = true;
        call->status = st;
      }
    }
    if (h.has("grpc-status")) {
      call->grpc_status = to_int(h.get("grpc-status"), 2);
      call->grpc_message = grpc_unescape(h.get("grpc-message").substr(0, 1024));
    }
    if (end_stream) c_.finish(*call, sink_, {});
  }
  void on_data(uint32_t id, size_t len, bool end_stream) override {
    H2Call* call = c_.find(id);
    if (!call || !call->announced) return;
    first_byte(*call);
    call->response_bytes += h2::kFrameHeader + len;
    if (end_stream) c_.finish(*call, sink_, {});
  }
  void on_reset(uint32_t id, uint32_t code) override {
    if (H2Call* call = c_.find(id)) {
      char e[64];
      std::snprintf(e, sizeof e, "stream reset by the server (RST_STREAM %u)", code);
      c_.finish(*call, sink_, e);
    }
  }

 private:
  void first_byte(H2Call& c) {
    if (c.first_byte_seen) return;
    c.first_byte_seen = true;
    sink_.on_first_byte(c);
  }
  H2Client& c_;
  H2CallSink& sink_;
};

void H2Client::reset() {
  out_.reset(true);
  in_.reset(false);
  for (size_t i = 0; i < used_; ++i) calls_[i] = H2Call{};
  used_ = 0;
}

void H2Client::reset_upgraded(const H2Call& c) {
  reset();
  calls_[0] = c;
  calls_[0].stream = 1;
  calls_[0].announced = true;
  used_ = 1;
}

size_t H2Client::open_calls() const {
  size_t k = 0;
  for (size_t i = 0; i < used_; ++i) k += calls_[i].stream != 0;
  return k;
}

H2Call* H2Client::find(uint32_t stream) {
  for (size_t i = 0; i < used_; ++i)
    if (calls_[i].stream == stream) return &calls_[i];
  return nullptr;
}

H2Call* H2Client::take(uint32_t stream) {
  if (stream == 0) return nullptr;  // 0 marks a free slot (and is no stream)
  H2Call* c = nullptr;
  for (size_t i = 0; i < used_ && !c; ++i)
    if (calls_[i].stream == 0) c = &calls_[i];
  if (!c && used_ < kMaxCalls) c = &calls_[used_++];
  if (!c) return nullptr;
  *c = H2Call{};
  c->stream = stream;
  return c;
}

void H2Client::note_span(uint32_t stream, uint64_t span_id) {
  H2Call* c = find(stream);
  if (!c) c = take(stream);
  if (c && !c->announced) c->span_id = span_id;
}

void H2Client::finish(H2Call& c, H2CallSink& sink, std::string_view error) {
  H2Call done = std::move(c);
  c = H2Call{};
  while (used_ > 0 && calls_[used_ - 1].stream == 0) --used_;
  if (done.announced) sink.on_response(done, error);
}

void H2Client::on_sent(const char* p, size_t n, H2CallSink& sink) {
  if (dead()) return;
  OutSide side(*this, sink);
  if (!out_.feed(p, n, side)) {
    in_.stop();
    on_end(sink, "HTTP/2 connection no longer followed (frames not understood)");
  }
}

void H2Client::on_received(const char* p, size_t n, H2CallSink& sink) {
  if (dead()) return;
  InSide side(*this, sink);
  if (!in_.feed(p, n, side)) {
    out_.stop();
    on_end(sink, "HTTP/2 connection no longer followed (frames not understood)");
  }
}

void H2Client::on_end(H2CallSink& sink, std::string_view error) {
  for (size_t i = 0; i < used_; ++i)
    if (calls_[i].stream) finish(calls_[i], sink, error.empty() ? "connection closed before the response ended" : error);
  used_ = 0;
}

bool IoBytes::copy(size_t off, size_t n, char* dst) const {
  if (off > len || n > len - off) return false;
  size_t base = 0;
  for (int i = 0; i < cnt && n > 0; ++i) {
    size_t l = iov[i].iov_len;
    if (off < base + l) {
      size_t from = off - base;
      size_t k = l - from < n ? l - from : n;
      std::memcpy(dst, static_cast<const char*>(iov[i].iov_base) + from, k);
      dst += k;
      off += k;
      n -= k;
    }
    base += l;
  }
  return n == 0;
}

size_t H2Client::plan_insert(const IoBytes& buf, std::string& scratch, Insert* out, size_t max) {
  if (dead() || max == 0) return 0;
  int64_t rem = out_.frame_remaining();
  size_t pos;
  if (rem >= 0) {
    pos = size_t(rem);
  } else {
    // The last write ended inside a frame header: the rest of it starts this one.
    uint8_t h[h2::kFrameHeader];
    size_t have = out_.partial_header(h);
    if (!have || !buf.copy(0, h2::kFrameHeader - have, reinterpret_cast<char*>(h) + have)) return 0;
    if (h[3] == h2::HEADERS || h[3] == h2::CONTINUATION || h[3] == h2::PUSH_PROMISE) return 0;  // not decoded ahead
    pos = h2::kFrameHeader - have + ((size_t(h[0]) << 16) | (size_t(h[1]) << 8) | h[2]);
  }
  size_t k = 0;
  while (pos + h2::kFrameHeader <= buf.len && k < max) {
    uint8_t u[h2::kFrameHeader];
    if (!buf.copy(pos, sizeof u, reinterpret_cast<char*>(u))) break;
    uint32_t flen = (uint32_t(u[0]) << 16) | (uint32_t(u[1]) << 8) | u[2];
    uint8_t type = u[3], flags = u[4];
    uint32_t stream = ((uint32_t(u[5]) << 24) | (uint32_t(u[6]) << 16) | (uint32_t(u[7]) << 8) | u[8]) & 0x7fffffffu;
    size_t end = pos + h2::kFrameHeader + flen;
    if (type == h2::CONTINUATION || type == h2::PUSH_PROMISE) break;
    if (type == h2::HEADERS) {
      // Every HEADERS frame up to here must be decoded ahead, in order: stop at one that cannot be.
      if (end > buf.len || !(flags & h2::END_HEADERS) || flen > h2::kMaxHeaderBlock) break;
      scratch.resize(end - pos);
      if (!buf.copy(pos, end - pos, scratch.data())) break;
      const h2::HeaderList* fields = nullptr;
      size_t pe = 0;
      if (!out_.decode_ahead(out_.offset() + pos, scratch.data(), end - pos, &fields, &pe)) break;
      // A new request (not trailers of one), without a traceparent of its own, with room for ours.
      H2Call* known = find(stream);
      bool request = !fields->get(":method").empty() && !(known && known->announced);
      if (request && pe && flen + kMaxInsert <= 16384) {
        unsigned own = (fields->has("tracestate") ? kOwnTraceState : 0) | (fields->has("baggage") ? kOwnBaggage : 0);
        uint64_t program_span = 0;
        if (std::string_view v = fields->get("traceparent"); !v.empty()) {
          // The program's own traceparent: only a span a runtime shim had the agent name (its request
          // known) may get that request's tracestate and baggage beside it; others are left alone.
          TraceParent tp;
          if (parse_traceparent(v, tp) && (own & (kOwnTraceState | kOwnBaggage)) != (kOwnTraceState | kOwnBaggage)) {
            own |= kOwnTraceParent;
            program_span = tp.parent_id;
          } else {
            own = ~0u;
          }
        }
        if (own != ~0u) out[k++] = Insert{pos, pos + pe, stream, flen, own, program_span};
      }
    }
    if (end > buf.len) break;
    pos = end;
  }
  return k;
}

size_t hpack_traceparent(const uint8_t trace_id[16], uint64_t span_id, char* out, size_t cap) {
  constexpr std::string_view kName = "traceparent";
  size_t len = 1 + 1 + kName.size() + 1 + kTraceParentLen;
  if (cap < len) return 0;
  size_t k = 0;
  out[k++] = 0x00;                       // literal without indexing, new name
  out[k++] = char(kName.size());         // H=0, 7-bit length (11)
  std::memcpy(out + k, kName.data(), kName.size());
  k += kName.size();
  out[k++] = char(kTraceParentLen);      // H=0, 55 < 127
  format_traceparent(trace_id, span_id, 0x01, out + k);
  return k + kTraceParentLen;
}

}  // namespace txray
