// The HTTP/2 core without a preload: frames and HPACK (h2_frames), the outbound call tracker and where a
// traceparent field goes (h2_client), the byte accounting of the edits (h2_inject). Header blocks are
// made with libnghttp2's own HPACK encoder, with its dynamic table, as a real client's are; the edited
// bytes are decoded by a second, independent decoder playing the peer, which must see every field the
// program sent, the traceparent field, and every later block decoded as the program encoded it.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <sys/uio.h>

#include <string>
#include <vector>

#include "protocols/http2/h2_client.h"
#include "protocols/http2/h2_frames.h"
#include "protocols/http2/h2_inject.h"
#include "protocols/tracecontext/context.h"

using namespace txray;

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Encoder {
  nghttp2_hd_deflater* d = nullptr;
  Encoder() { nghttp2_hd_deflate_new(&d, 4096); }
  ~Encoder() { nghttp2_hd_deflate_del(d); }
  std::string block(const Fields& f) {
    std::vector<nghttp2_nv> nv;
    for (auto& [n, v] : f)
      nv.push_back({(uint8_t*)n.data(), (uint8_t*)v.data(), n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    std::string out(nghttp2_hd_deflate_bound(d, nv.data(), nv.size()), '\0');
    ssize_t k = nghttp2_hd_deflate_hd(d, (uint8_t*)out.data(), out.size(), nv.data(), nv.size());
    out.resize(size_t(k));
    return out;
  }
};

// The peer's decoder: all fields of a block.
struct Decoder {
  nghttp2_hd_inflater* i = nullptr;
  Decoder() { nghttp2_hd_inflate_new(&i); }
  ~Decoder() { nghttp2_hd_inflate_del(i); }
  Fields block(const std::string& b) {
    Fields out;
    auto* in = (uint8_t*)b.data();
    size_t left = b.size();
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      ssize_t r = nghttp2_hd_inflate_hd2(i, &nv, &flags, in, left, 1);
      EXPECT_GE(r, 0);
      if (r < 0) return out;
      in += r;
      left -= size_t(r);
      if (flags & NGHTTP2_HD_INFLATE_EMIT) out.push_back({std::string((char*)nv.name, nv.namelen), std::string((char*)nv.value, nv.valuelen)});
      if (flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(i);
        return out;
      }
    }
  }
};

std::string frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  uint32_t n = uint32_t(payload.size());
  f += char(n >> 16);
  f += char(n >> 8);
  f += char(n);
  f += char(type);
  f += char(flags);
  f += char(stream >> 24);
  f += char(stream >> 16);
  f += char(stream >> 8);
  f += char(stream);
  return f + payload;
}

Fields request(const std::string& method) {
  return {{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", "back:50051"},
          {"content-type", "application/grpc"}, {"te", "trailers"}};
}

class Sink : public H2CallSink {
 public:
  std::vector<std::string> log;
  void on_request(H2Call& c, const h2::HeaderList& h) override {
    log.push_back("req " + std::to_string(c.stream) + " " + std::string(h.get(":path")) + (c.grpc ? " grpc" : "") +
                  " span=" + std::to_string(c.span_id));
  }
  void on_first_byte(H2Call& c) override { log.push_back("first " + std::to_string(c.stream)); }
  void on_response(H2Call& c, std::string_view error) override {
    log.push_back("resp " + std::to_string(c.stream) + " " + std::to_string(c.status) + " grpc=" +
                  std::to_string(c.grpc_status) + " " + c.grpc_message + "|" + std::string(error));
  }
};

// A frame parsed back from the wire: the edited header block decoded by the peer.
struct WireFrame {
  uint8_t type;
  uint32_t stream;
  std::string payload;
};
std::vector<WireFrame> frames_of(const std::string& wire, size_t from) {
  std::vector<WireFrame> out;
  for (size_t p = from; p + 9 <= wire.size();) {
    auto* u = (const uint8_t*)wire.data() + p;
    uint32_t len = (uint32_t(u[0]) << 16) | (uint32_t(u[1]) << 8) | u[2];
    uint32_t stream = ((uint32_t(u[5]) << 24) | (uint32_t(u[6]) << 16) | (uint32_t(u[7]) << 8) | u[8]) & 0x7fffffff;
    out.push_back({u[3], stream, wire.substr(p + 9, len)});
    p += 9 + len;
  }
  return out;
}

}  // namespace

TEST(H2Frames, PrefaceMatch) {
  EXPECT_EQ(h2::match_preface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nxx", 26), 1);
  EXPECT_EQ(h2::match_preface("PRI * HT", 8), 0);
  EXPECT_EQ(h2::match_preface("GET / HTTP/1.1\r\n", 16), -1);
}

TEST(H2Client, CallsFromFramesInAnyPiecesWithTheDynamicTable) {
  Encoder enc_c, enc_s;
  std::string out = std::string(h2::kPreface) + frame(h2::SETTINGS, 0, 0, "");
  std::string in = frame(h2::SETTINGS, 0, 0, "");
  for (uint32_t s = 1; s <= 5; s += 2) {  // the 2nd and 3rd requests' :path is indexed (dynamic table)
    out += frame(h2::HEADERS, h2::END_HEADERS, s, enc_c.block(request("/demo.Back/Get")));
    out += frame(h2::DATA, h2::END_STREAM, s, std::string(8, 'x'));
  }
  for (int s = 5; s >= 1; s -= 2) {
    in += frame(h2::HEADERS, h2::END_HEADERS, s, enc_s.block({{":status", "200"}, {"content-type", "application/grpc"}}));
    in += frame(h2::DATA, 0, s, std::string(12, 'y'));
    in += frame(h2::HEADERS, h2::END_HEADERS | h2::END_STREAM, s,
                enc_s.block({{"grpc-status", s == 3 ? "5" : "0"}, {"grpc-message", s == 3 ? "no%20item" : ""}}));
  }
  std::vector<std::string> whole;
  for (size_t piece : {size_t(0), size_t(1), size_t(7)}) {
    H2Client c;
    Sink sink;
    c.reset();
    auto feed = [&](const std::string& b, bool sent) {
      size_t step = piece ? piece : b.size();
      for (size_t i = 0; i < b.size(); i += step) {
        size_t n = std::min(step, b.size() - i);
        if (sent) c.on_sent(b.data() + i, n, sink);
        else c.on_received(b.data() + i, n, sink);
      }
    };
    feed(out, true);
    feed(in, false);
    EXPECT_FALSE(c.dead());
    EXPECT_EQ(c.open_calls(), 0u);
    if (piece == 0) whole = sink.log;
    else EXPECT_EQ(sink.log, whole) << "piece " << piece;
  }
  ASSERT_EQ(whole.size(), 9u);
  EXPECT_EQ(whole[0], "req 1 /demo.Back/Get grpc span=0");
  EXPECT_EQ(whole[2], "req 5 /demo.Back/Get grpc span=0");
  EXPECT_EQ(whole[5], "first 3");
  EXPECT_EQ(whole[6], "resp 3 200 grpc=5 no item|");
}

TEST(H2Client, GivesUpOnGarbageAndMidStream) {
  Sink sink;
  H2Client c;
  c.reset();
  std::string mid = frame(h2::DATA, 0, 1, "abc");  // no preface
  c.on_sent(mid.data(), mid.size(), sink);
  EXPECT_TRUE(c.dead());
  H2Client d;
  d.reset();
  std::string bad = std::string(h2::kPreface) + frame(h2::CONTINUATION, h2::END_HEADERS, 1, "x");
  d.on_sent(bad.data(), bad.size(), sink);
  EXPECT_TRUE(d.dead());
  EXPECT_TRUE(sink.log.empty());
}

// The program writes three requests in one write; the kernel takes them in small pieces. The peer must
// decode every original field plus traceparent in each, and the program must see its own byte counts.
TEST(H2Inject, FieldsGoInAndThePeerDecodesEverything) {
  Encoder enc;
  std::string prog = std::string(h2::kPreface) + frame(h2::SETTINGS, 0, 0, "");
  std::vector<Fields> sent;
  for (uint32_t s = 1; s <= 5; s += 2) {
    Fields f = request(s == 5 ? "/demo.Back/List" : "/demo.Back/Get");
    sent.push_back(f);
    prog += frame(h2::HEADERS, h2::END_HEADERS, s, enc.block(f));
    prog += frame(h2::DATA, h2::END_STREAM, s, "payload");
  }
  H2Client c;
  H2Injector inj;
  Sink sink;
  c.reset();
  std::string scratch, wire;
  size_t done = 0;
  uint8_t trace[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  int writes = 0;
  while (done < prog.size() && ++writes < 10000) {
    iovec iov{prog.data() + done, prog.size() - done};
    IoBytes bytes{&iov, 1, iov.iov_len};
    H2Client::Insert plan[8];
    size_t k = c.plan_insert(bytes, scratch, plan, 8);
    inj.begin();
    std::vector<uint64_t> spans;
    for (size_t i = 0; i < k; ++i) {
      char field[128];
      spans.push_back(1000 + plan[i].stream);
      size_t fl = hpack_traceparent(trace, spans.back(), field, sizeof field);
      ASSERT_EQ(fl, 69u);  // 0x00, 11, "traceparent", 55, the value
      ASSERT_TRUE(inj.add(plan[i].frame_at, plan[i].at, prog.data() + done + plan[i].frame_at, plan[i].frame_len,
                          field, fl, uint32_t(i)));
    }
    size_t mine = 0;
    for (int round = 0; round < 100; ++round) {
      iovec out[16];
      int n = inj.gather(&iov, 1, out);
      std::string laid;
      for (int i = 0; i < n; ++i) laid.append((char*)out[i].iov_base, out[i].iov_len);
      size_t accepted = std::min<size_t>(laid.size(), 13);  // a kernel that takes 13 bytes per write
      wire += laid.substr(0, accepted);
      uint32_t tags[H2Injector::kMaxEdits];
      size_t ntags = 0;
      mine = inj.commit(accepted, tags, &ntags);
      for (size_t t = 0; t < ntags; ++t) c.note_span(plan[tags[t]].stream, spans[tags[t]]);
      if (mine > 0) break;
    }
    ASSERT_GT(mine, 0u);
    c.on_sent(prog.data() + done, mine, sink);
    done += mine;
  }
  EXPECT_EQ(done, prog.size());
  EXPECT_FALSE(inj.has_pending());
  ASSERT_EQ(sink.log.size(), 3u);
  EXPECT_EQ(sink.log[0], "req 1 /demo.Back/Get grpc span=1001");
  EXPECT_EQ(sink.log[2], "req 5 /demo.Back/List grpc span=1005");
  // The peer: the wire has the same frames, each HEADERS grown by the field, every block decodable in
  // order with one decoder (the dynamic table undisturbed).
  ASSERT_EQ(wire.substr(0, h2::kPreface.size()), h2::kPreface);
  Decoder peer;
  auto frames = frames_of(wire, h2::kPreface.size());
  ASSERT_EQ(frames.size(), 7u);
  size_t r = 0;
  for (const WireFrame& f : frames) {
    if (f.type != h2::HEADERS) continue;
    Fields got = peer.block(f.payload);
    Fields want = sent[r];
    char tp[56];
    snprintf(tp, sizeof tp, "00-0102030405060708090a0b0c0d0e0f10-%016llx-01", 1000ULL + f.stream);
    want.insert(want.begin() + 4, {"traceparent", tp});  // after the pseudo-headers
    EXPECT_EQ(got, want) << "stream " << f.stream;
    ++r;
  }
  EXPECT_EQ(r, 3u);
}

// The whole context (traceparent, a tracestate past HPACK's 7-bit length prefix, baggage) into three
// requests: one with nothing of its own, one with its own tracestate (only traceparent and baggage go
// in), one with its own traceparent (a shim's: plan says so, and only tracestate and baggage go in).
// libnghttp2's decoder, as the peer, reads every block.
TEST(H2Inject, TraceStateAndBaggageBesideTheProgramsOwnFields) {
  Encoder enc;
  std::string prog = std::string(h2::kPreface) + frame(h2::SETTINGS, 0, 0, "");
  const std::string shim_tp = "00-0102030405060708090a0b0c0d0e0f10-00000000000004d2-01";
  std::vector<Fields> sent = {request("/t.S/A"), request("/t.S/B"), request("/t.S/C")};
  sent[1].push_back({"tracestate", "mine=1"});
  sent[2].push_back({"traceparent", shim_tp});
  for (uint32_t i = 0; i < 3; ++i) {
    prog += frame(h2::HEADERS, h2::END_HEADERS, 1 + 2 * i, enc.block(sent[i]));
    prog += frame(h2::DATA, h2::END_STREAM, 1 + 2 * i, "x");
  }
  H2Client c;
  c.reset();
  std::string scratch;
  iovec iov{prog.data(), prog.size()};
  IoBytes bytes{&iov, 1, iov.iov_len};
  H2Client::Insert plan[8];
  ASSERT_EQ(c.plan_insert(bytes, scratch, plan, 8), 3u);
  EXPECT_EQ(plan[0].own, 0u);
  EXPECT_EQ(plan[1].own, unsigned(kOwnTraceState));
  EXPECT_EQ(plan[2].own, unsigned(kOwnTraceParent));
  EXPECT_EQ(plan[2].program_span, 0x4d2u);

  OutboundContext ctx;
  for (int i = 0; i < 16; ++i) ctx.trace_id[i] = uint8_t(i + 1);
  ctx.flags = 0x03;
  std::string ts = "vendor1=a,vendor2=" + std::string(150, 'b');
  ctx.tracestate = ts;
  ctx.baggage = "userId=alice";
  H2Injector inj;
  inj.begin();
  for (size_t i = 0; i < 3; ++i) {
    char field[H2Injector::kMaxField];
    uint64_t span = plan[i].own & kOwnTraceParent ? plan[i].program_span : 100 + i;
    size_t fl = hpack_context(ctx, span, plan[i].own, field, sizeof field);
    ASSERT_GT(fl, 0u);
    ASSERT_TRUE(inj.add(plan[i].frame_at, plan[i].at, prog.data() + plan[i].frame_at, plan[i].frame_len, field, fl,
                        uint32_t(i)));
  }
  iovec out[32];
  int n = inj.gather(&iov, 1, out);
  std::string wire;
  for (int i = 0; i < n; ++i) wire.append((char*)out[i].iov_base, out[i].iov_len);
  uint32_t tags[H2Injector::kMaxEdits];
  size_t ntags = 0;
  EXPECT_EQ(inj.commit(wire.size(), tags, &ntags), prog.size());
  EXPECT_EQ(ntags, 3u);

  Decoder peer;
  std::vector<Fields> got;
  for (const WireFrame& f : frames_of(wire, h2::kPreface.size()))
    if (f.type == h2::HEADERS) got.push_back(peer.block(f.payload));
  ASSERT_EQ(got.size(), 3u);
  auto tp = [](uint64_t span) {
    char v[56];
    snprintf(v, sizeof v, "00-0102030405060708090a0b0c0d0e0f10-%016llx-03", (unsigned long long)span);
    return std::string(v);
  };
  // The agent's fields go in right after the pseudo-headers (the first 4), the program's follow.
  auto with = [](Fields f, Fields mine) {
    f.insert(f.begin() + 4, mine.begin(), mine.end());
    return f;
  };
  EXPECT_EQ(got[0], with(sent[0], {{"traceparent", tp(100)}, {"tracestate", ts}, {"baggage", "userId=alice"}}));
  EXPECT_EQ(got[1], with(sent[1], {{"traceparent", tp(101)}, {"baggage", "userId=alice"}}));
  EXPECT_EQ(got[2], with(sent[2], {{"tracestate", ts}, {"baggage", "userId=alice"}}));
}

// After a 101 to Upgrade: h2c, the upgraded request's call is stream 1: its response comes as HTTP/2
// frames right after the 101, the program's preface and new streams follow.
TEST(H2Client, UpgradedCallIsStreamOne) {
  Encoder enc;
  Encoder server;
  H2Client c;
  Sink sink;
  H2Call up;
  up.request_bytes = 120;
  up.response_bytes = 40;
  up.first_byte_seen = true;
  up.span_id = 77;
  c.reset_upgraded(up);
  EXPECT_EQ(c.open_calls(), 1u);
  std::string resp1 = frame(4, 0, 0, "") + frame(1, 4, 1, server.block({{":status", "404"}})) + frame(0, 1, 1, "nope");
  c.on_received(resp1.data(), resp1.size(), sink);
  ASSERT_EQ(sink.log.size(), 1u);
  EXPECT_EQ(sink.log[0], "resp 1 404 grpc=-1 |");
  std::string out = std::string(h2::kPreface) + frame(4, 0, 0, "") +
                    frame(1, 5, 3, enc.block({{":method", "GET"}, {":scheme", "http"}, {":path", "/next"}, {":authority", "h"}}));
  c.on_sent(out.data(), out.size(), sink);
  std::string resp3 = frame(1, 5, 3, server.block({{":status", "200"}}));
  c.on_received(resp3.data(), resp3.size(), sink);
  ASSERT_EQ(sink.log.size(), 4u);
  EXPECT_EQ(sink.log[1], "req 3 /next span=0");
  EXPECT_EQ(sink.log[2], "first 3");
  EXPECT_EQ(sink.log[3], "resp 3 200 grpc=-1 |");
  EXPECT_EQ(c.open_calls(), 0u);
}
