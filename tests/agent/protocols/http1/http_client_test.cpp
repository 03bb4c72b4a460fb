// HttpClientTracker: the bytes of real-looking HTTP/1.x exchanges, fed in the pieces a socket may
// deliver, must give exactly one call per request with the right fields.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocols/http1/http_client.h"

using namespace txray;

namespace {

struct Ended {
  std::string method, target, host;
  int status;
  uint64_t req_bytes, resp_bytes, span;
  std::string error;
  bool first_byte;
};

// Records what the tracker reports; method/target/host are remembered per call via a side table
// keyed by the step index the sink hands out (as the real glue keeps its StepRef in the call).
class Recorder : public HttpClientSink {
 public:
  std::vector<Ended> ended;
  std::vector<Ended> started;
  int first_bytes = 0;
  void on_request(HttpCall& c, const HttpRequestHead& h) override {
    c.step.index = static_cast<int32_t>(started.size());
    started.push_back({std::string(h.method), std::string(h.target), std::string(h.host), 0, 0, 0,
                       h.program_span_id, "", false});
  }
  void on_first_byte(HttpCall& c) override { ++first_bytes; }
  void on_response(HttpCall& c, std::string_view error) override {
    Ended e = started.at(static_cast<size_t>(c.step.index));
    e.status = c.status;
    e.req_bytes = c.request_bytes;
    e.resp_bytes = c.response_bytes;
    e.span = c.span_id;
    e.error = std::string(error);
    e.first_byte = c.first_byte_seen;
    ended.push_back(e);
  }
};

// Feeds s in pieces of `step` bytes.
void send(HttpClientTracker& t, Recorder& r, const std::string& s, size_t step = 0) {
  if (!step) step = s.size();
  for (size_t i = 0; i < s.size(); i += step) t.on_sent(s.data() + i, std::min(step, s.size() - i), r);
}
void recv(HttpClientTracker& t, Recorder& r, const std::string& s, size_t step = 0) {
  if (!step) step = s.size();
  for (size_t i = 0; i < s.size(); i += step) t.on_received(s.data() + i, std::min(step, s.size() - i), r);
}

const std::string kGet = "GET /items/7?q=secret&page=2 HTTP/1.1\r\nHost: api.local:8080\r\nAccept: */*\r\n\r\n";
const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello";

}  // namespace

TEST(HttpClient, OneRequestOneResponse) {
  HttpClientTracker t;
  Recorder r;
  send(t, r, kGet);
  ASSERT_EQ(r.started.size(), 1u);
  EXPECT_EQ(r.started[0].method, "GET");
  EXPECT_EQ(r.started[0].target, "/items/7?q=secret&page=2");
  EXPECT_EQ(r.started[0].host, "api.local:8080");
  EXPECT_TRUE(r.ended.empty());
  recv(t, r, kOk);
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].status, 200);
  EXPECT_EQ(r.ended[0].req_bytes, kGet.size());
  EXPECT_EQ(r.ended[0].resp_bytes, kOk.size());
  EXPECT_EQ(r.ended[0].error, "");
  EXPECT_EQ(r.first_bytes, 1);
  EXPECT_EQ(t.outstanding(), 0u);
}

TEST(HttpClient, EverySplitOfRequestAndResponseGivesTheSameCall) {
  for (size_t step = 1; step <= 13; ++step) {
    HttpClientTracker t;
    Recorder r;
    send(t, r, kGet, step);
    recv(t, r, kOk, step);
    ASSERT_EQ(r.ended.size(), 1u) << "step " << step;
    EXPECT_EQ(r.ended[0].method, "GET");
    EXPECT_EQ(r.ended[0].host, "api.local:8080");
    EXPECT_EQ(r.ended[0].status, 200);
    EXPECT_EQ(r.ended[0].resp_bytes, kOk.size());
    EXPECT_EQ(r.first_bytes, 1);
  }
}

TEST(HttpClient, KeepAliveGivesOneCallPerRequest) {
  HttpClientTracker t;
  Recorder r;
  for (int i = 0; i < 3; ++i) {
    send(t, r, kGet);
    recv(t, r, kOk, 4);
  }
  ASSERT_EQ(r.ended.size(), 3u);
  for (auto& e : r.ended) EXPECT_EQ(e.status, 200);
  EXPECT_EQ(r.first_bytes, 3);
}

TEST(HttpClient, PipelinedRequestsMatchResponsesInOrder) {
  HttpClientTracker t;
  Recorder r;
  std::string a = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n", b = "GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
  send(t, r, a + b);  // both in one write
  EXPECT_EQ(t.outstanding(), 2u);
  std::string ra = "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!";
  std::string rb = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  recv(t, r, ra + rb, 7);
  ASSERT_EQ(r.ended.size(), 2u);
  EXPECT_EQ(r.ended[0].target, "/a");
  EXPECT_EQ(r.ended[0].status, 404);
  EXPECT_EQ(r.ended[0].resp_bytes, ra.size());
  EXPECT_EQ(r.ended[1].target, "/b");
  EXPECT_EQ(r.ended[1].status, 200);
  EXPECT_EQ(r.ended[1].resp_bytes, rb.size());
}

TEST(HttpClient, ChunkedResponseSplitAnywhere) {
  std::string resp =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (size_t step = 1; step <= resp.size(); step += 3) {
    HttpClientTracker t;
    Recorder r;
    send(t, r, kGet);
    recv(t, r, resp, step);
    ASSERT_EQ(r.ended.size(), 1u) << "step " << step;
    EXPECT_EQ(r.ended[0].resp_bytes, resp.size());
    EXPECT_EQ(r.ended[0].error, "");
    // the connection is ready for the next request
    send(t, r, kGet);
    recv(t, r, kOk);
    ASSERT_EQ(r.ended.size(), 2u);
  }
}

TEST(HttpClient, HeadResponseHasNoBody) {
  HttpClientTracker t;
  Recorder r;
  send(t, r, "HEAD /big HTTP/1.1\r\nHost: h\r\n\r\n");
  std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n";
  recv(t, r, resp);
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].status, 200);
  EXPECT_EQ(r.ended[0].resp_bytes, resp.size());
}

TEST(HttpClient, NoBodyFor204And304) {
  for (const char* s : {"HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n"}) {
    HttpClientTracker t;
    Recorder r;
    send(t, r, kGet);
    recv(t, r, s);
    ASSERT_EQ(r.ended.size(), 1u) << s;
    send(t, r, kGet);
    recv(t, r, kOk);
    ASSERT_EQ(r.ended.size(), 2u) << s;
  }
}

TEST(HttpClient, InterimResponsesPrecedeTheFinalOne) {
  HttpClientTracker t;
  Recorder r;
  std::string head = "POST /upload HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n";
  send(t, r, head);
  std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
  recv(t, r, cont);
  EXPECT_TRUE(r.ended.empty());
  send(t, r, "body");
  std::string early = "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n";
  recv(t, r, early + "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].status, 201);
  EXPECT_EQ(r.ended[0].req_bytes, head.size() + 4);
  EXPECT_EQ(r.first_bytes, 1);
}

TEST(HttpClient, RequestBodiesByLengthAndChunked) {
  HttpClientTracker t;
  Recorder r;
  std::string p1 = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789";
  send(t, r, p1, 6);
  recv(t, r, kOk);
  std::string p2 = "PUT /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
  send(t, r, p2, 5);
  recv(t, r, kOk);
  ASSERT_EQ(r.ended.size(), 2u);
  EXPECT_EQ(r.ended[0].req_bytes, p1.size());
  EXPECT_EQ(r.ended[1].req_bytes, p2.size());
  EXPECT_EQ(r.ended[1].method, "PUT");
}

TEST(HttpClient, BodyUntilCloseEndsAtEndOfStream) {
  HttpClientTracker t;
  Recorder r;
  send(t, r, "GET / HTTP/1.0\r\n\r\n");
  std::string resp = "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html>…</html>";
  recv(t, r, resp, 9);
  EXPECT_TRUE(r.ended.empty());
  t.on_end(r);
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].error, "");
  EXPECT_EQ(r.ended[0].resp_bytes, resp.size());
  EXPECT_EQ(r.ended[0].host, "");
}

TEST(HttpClient, ConnectionClosedBeforeTheResponseIsAnError) {
  HttpClientTracker t;
  Recorder r;
  send(t, r, kGet);
  recv(t, r, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
  t.on_end(r);
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].status, 200);
  EXPECT_NE(r.ended[0].error, "");

  HttpClientTracker t2;
  Recorder r2;
  send(t2, r2, kGet);
  t2.on_end(r2, "Connection reset by peer");
  ASSERT_EQ(r2.ended.size(), 1u);
  EXPECT_EQ(r2.ended[0].status, 0);
  EXPECT_EQ(r2.ended[0].error, "Connection reset by peer");
  EXPECT_FALSE(r2.ended[0].first_byte);
}

TEST(HttpClient, NonHttpConnectionsTurnOpaque) {
  for (const char* first : {"\x16\x03\x01\x02\x00", "*2\r\n$3\r\nGET\r\n", "GET key\r\n", "HELO x\r\n"}) {
    HttpClientTracker t;
    Recorder r;
    send(t, r, first);
    EXPECT_TRUE(t.opaque()) << first;
    send(t, r, kGet);
    EXPECT_TRUE(r.started.empty());
  }
}

TEST(HttpClient, UpgradeAndConnectTurnTheConnectionIntoATunnel) {
  HttpClientTracker t;
  Recorder r;
  send(t, r, "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
  recv(t, r, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi");
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].status, 101);
  EXPECT_TRUE(t.opaque());

  HttpClientTracker t2;
  Recorder r2;
  send(t2, r2, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  recv(t2, r2, "HTTP/1.1 200 Connection established\r\n\r\n");
  ASSERT_EQ(r2.ended.size(), 1u);
  EXPECT_EQ(r2.ended[0].status, 200);
  EXPECT_TRUE(t2.opaque());
}

TEST(HttpClient, ProgramsOwnTraceparentIsReported) {
  HttpClientTracker t;
  Recorder r;
  send(t, r, "GET / HTTP/1.1\r\nHost: h\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n");
  recv(t, r, kOk);
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].span, 0x00f067aa0ba902b7ull);
}

TEST(HttpClient, InsertedSpanIdGoesToTheRequestWhoseLineItFollows) {
  HttpClientTracker t;
  Recorder r;
  std::string line = "GET /x HTTP/1.1\r\n";
  EXPECT_EQ(t.insert_point(line.data(), line.size()), line.size());
  t.on_sent(line.data(), line.size(), r, 0x1234);
  send(t, r, "Host: h\r\n\r\n");
  recv(t, r, kOk);
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].span, 0x1234u);
}

TEST(HttpClient, InsertPoint) {
  HttpClientTracker t;
  Recorder r;
  // right after the request line
  EXPECT_EQ(t.insert_point(kGet.data(), kGet.size()), kGet.find('\n') + 1);
  // not when the program already sends traceparent in the same write
  std::string own = "GET / HTTP/1.1\r\nHost: h\r\nTraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n";
  EXPECT_EQ(t.insert_point(own.data(), own.size()), HttpClientTracker::kNoInsert);
  // a traceparent in the body does not count
  std::string body = "POST / HTTP/1.1\r\nContent-Length: 20\r\n\r\ntraceparent: x\r\n\r\n";
  EXPECT_EQ(t.insert_point(body.data(), body.size()), body.find('\n') + 1);
  // not for a request line that is not HTTP/1.x, nor without its end
  EXPECT_EQ(t.insert_point("GET key\r\n", 9), HttpClientTracker::kNoInsert);
  EXPECT_EQ(t.insert_point("GET /a HTTP/1.1", 15), HttpClientTracker::kNoInsert);
  // request line split over writes: the point is in the write that ends it
  send(t, r, "GET /lo");
  std::string rest = "ng HTTP/1.1\r\nHost: h\r\n\r\n";
  EXPECT_EQ(t.insert_point(rest.data(), rest.size()), rest.find('\n') + 1);
  send(t, r, rest);
  // in headers or in a body: nowhere
  EXPECT_EQ(t.insert_point("X: y\r\n", 6), HttpClientTracker::kNoInsert);
}

// Found by agent.fuzz_http_outbound: insert_point took lines the tracker then refused as not HTTP/1.x.
TEST(HttpClientInsert, OnlyIntoRequestLinesTheTrackerFollows) {
  HttpClientTracker t;
  for (std::string line : {std::string("GET HTTP/1.1\r\n"), "GET /" + std::string(5000, 'a') + " HTTP/1.1\r\n"})
    EXPECT_EQ(t.insert_point(line.data(), line.size()), HttpClientTracker::kNoInsert) << line.substr(0, 20);
  std::string ok = "GET / HTTP/1.1\r\n";
  EXPECT_EQ(t.insert_point(ok.data(), ok.size()), ok.size());
}

TEST(HttpClientUrl, BuildsAndMasks) {
  const redact::Policy mask;
  redact::Policy raw;
  raw.raw = raw.raw_query = true;
  EXPECT_EQ(http_call_url("http", "api:8080", "/items/7?q=secret&page=2&flag", "", mask),
            "http://api:8080/items/7?q=?&page=?&flag");
  EXPECT_EQ(http_call_url("http", "api", "/a?b=1#frag", "", raw), "http://api/a?b=1");
  EXPECT_EQ(http_call_url("http", "", "/a", "127.0.0.1:9000", mask), "http://127.0.0.1:9000/a");
  EXPECT_EQ(http_call_url("http", "proxy", "http://example.com/x?k=v", "", mask), "http://example.com/x?k=?");
  EXPECT_EQ(http_call_url("https", "h", "/", "", mask), "https://h/");
  // absolute-form with no path: the query was taken for part of the host, unmasked (agent.fuzz_http_outbound)
  EXPECT_EQ(http_call_url("http", "proxy", "http://example.com?token=abc&x=1", "", mask),
            "http://example.com?token=?&x=?");
  // CONNECT's authority-form target (seen in agent.fuzz_http_outbound's seed: "http://example.com:443example.com:443")
  EXPECT_EQ(http_call_url("http", "example.com:443", "example.com:443", "", mask), "http://example.com:443");
}

TEST(HttpClientUrl, UserinfoPathAndKeptParameters) {
  std::string problems;
  redact::Policy p = redact::parse(nullptr, "page", "/reset/*", &problems);
  ASSERT_EQ(problems, "");
  EXPECT_EQ(http_call_url("http", "", "http://bob:SECRET@h:8080/reset/T0KEN?page=2&api_key=K", "", p),
            "http://bob:?@h:8080/reset/*?page=2&api_key=?");
  EXPECT_EQ(http_call_url("http", "h", "/reset/T0KEN", "", p), "http://h/reset/*");
  EXPECT_EQ(http_call_url("http", "", "http://bob@h/x", "", p), "http://bob@h/x");
  redact::Policy raw = redact::parse("raw", nullptr, nullptr, &problems);
  EXPECT_EQ(http_call_url("http", "", "http://bob:SECRET@h/x?k=v", "", raw), "http://bob:SECRET@h/x?k=v");
}

TEST(HttpClientDetect, MethodsAndPrefixes) {
  EXPECT_TRUE(looks_like_http_request("GET /", 5));
  EXPECT_TRUE(looks_like_http_request("DELETE /", 8));
  EXPECT_TRUE(looks_like_http_request("OPT", 3));  // may still become OPTIONS
  EXPECT_FALSE(looks_like_http_request("GETX", 4));
  EXPECT_FALSE(looks_like_http_request("\x16\x03", 2));
}

// Randomized exchanges on one keep-alive connection: random methods, bodies, statuses, framings and
// splits; every call must end with the status and byte counts the generator knows.
TEST(HttpClient, RandomExchangesSplitAnywhere) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  auto rnd = [&seed](uint64_t n) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed % n;
  };
  auto feed = [&](HttpClientTracker& t, Recorder& r, const std::string& s, bool sent) {
    size_t i = 0;
    while (i < s.size()) {
      size_t k = std::min<size_t>(1 + rnd(40), s.size() - i);
      if (sent) t.on_sent(s.data() + i, k, r);
      else t.on_received(s.data() + i, k, r);
      i += k;
    }
  };
  for (int round = 0; round < 50; ++round) {
    HttpClientTracker t;
    Recorder r;
    std::vector<std::pair<int, size_t>> expected;  // status, response bytes
    for (int call = 0; call < 20; ++call) {
      const char* methods[] = {"GET", "HEAD", "POST", "PUT"};
      std::string method = methods[rnd(4)];
      std::string body(method == "POST" || method == "PUT" ? rnd(300) : 0, 'b');
      std::string req = method + " /r/" + std::to_string(call) + " HTTP/1.1\r\nHost: h\r\n";
      if (!body.empty() && rnd(2)) {
        req += "Transfer-Encoding: chunked\r\n\r\n";
        size_t i = 0;
        while (i < body.size()) {
          size_t k = std::min<size_t>(1 + rnd(100), body.size() - i);
          char hex[16];
          snprintf(hex, sizeof hex, "%zx", k);
          req += std::string(hex) + "\r\n" + body.substr(i, k) + "\r\n";
          i += k;
        }
        req += "0\r\n\r\n";
      } else {
        if (!body.empty()) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
        req += "\r\n" + body;
      }
      const int statuses[] = {200, 201, 204, 304, 404, 500};
      int status = statuses[rnd(6)];
      std::string resp = rnd(4) == 0 ? "HTTP/1.1 100 Continue\r\n\r\n" : "";
      std::string rbody(rnd(500), 'r');
      bool no_body = method == "HEAD" || status == 204 || status == 304;
      resp += "HTTP/1.1 " + std::to_string(status) + " X\r\nServer: s\r\n";
      if (!no_body && rnd(2)) {
        resp += "Transfer-Encoding: chunked\r\n\r\n";
        size_t i = 0;
        while (i < rbody.size()) {
          size_t k = std::min<size_t>(1 + rnd(200), rbody.size() - i);
          char hex[16];
          snprintf(hex, sizeof hex, "%zX", k);
          resp += std::string(hex) + "\r\n" + rbody.substr(i, k) + "\r\n";
          i += k;
        }
        resp += "0\r\n\r\n";
      } else {
        resp += "Content-Length: " + std::to_string(rbody.size()) + "\r\n\r\n";
        if (!no_body) resp += rbody;
      }
      feed(t, r, req, true);
      feed(t, r, resp, false);
      expected.emplace_back(status, resp.size());
      ASSERT_EQ(r.ended.size(), expected.size()) << "round " << round << " call " << call << "\n" << req << resp;
      EXPECT_EQ(r.ended.back().status, status);
      EXPECT_EQ(r.ended.back().resp_bytes, resp.size());
      EXPECT_EQ(r.ended.back().req_bytes, req.size());
      EXPECT_EQ(r.ended.back().error, "");
    }
  }
}

// Garbage never makes the tracker misbehave: it turns opaque or ignores what it cannot use.
TEST(HttpClient, GarbageAfterARequest) {
  uint64_t seed = 12345;
  for (int round = 0; round < 200; ++round) {
    HttpClientTracker t;
    Recorder r;
    send(t, r, kGet);
    std::string junk;
    for (int i = 0; i < 300; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      junk.push_back(static_cast<char>(seed >> 56));
    }
    recv(t, r, junk, 1 + round % 17);
    send(t, r, junk, 7);
    t.on_end(r);
    EXPECT_EQ(t.outstanding(), 0u);
    EXPECT_LE(r.ended.size(), 1u);
  }
}

TEST(HttpClient, SendfileBodiesAreCountedAndAnythingElseStopsTracking) {
  HttpClientTracker t;
  Recorder r;
  std::string head = "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n";
  send(t, r, head);
  t.on_sent_opaque(5000, r);  // the body by sendfile
  recv(t, r, kOk);
  ASSERT_EQ(r.ended.size(), 1u);
  EXPECT_EQ(r.ended[0].req_bytes, head.size() + 5000);
  send(t, r, kGet);  // the connection is ready for the next request
  recv(t, r, kOk);
  ASSERT_EQ(r.ended.size(), 2u);

  t.on_sent_opaque(10, r);  // bytes outside any body: the stream can no longer be parsed
  EXPECT_TRUE(t.opaque());
}

// RFC 7540 §3.2: a 101 to a request with Upgrade: h2c hands the call over (take_upgraded), not ended;
// on_received says where the HTTP/2 bytes begin, in whatever pieces they come.
TEST(HttpClient, UpgradeH2cHandsTheCallOver) {
  const std::string req = "GET /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: foo, h2c\r\n"
                          "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n";
  const std::string sw = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n";
  const std::string frames = std::string("\0\0\0\4\0\0\0\0\0", 9);
  for (size_t step : {sw.size() + frames.size(), size_t(1), size_t(5)}) {
    HttpClientTracker t;
    Recorder r;
    send(t, r, req);
    std::string in = sw + frames, rest;
    bool taken = false;
    for (size_t i = 0; i < in.size(); i += step) {
      size_t n = std::min(step, in.size() - i);
      size_t used = t.on_received(in.data() + i, n, r);
      HttpCall u;
      if (t.take_upgraded(&u)) {
        EXPECT_FALSE(taken);
        taken = true;
        EXPECT_EQ(u.request_bytes, req.size());
        EXPECT_EQ(u.response_bytes, sw.size());
        EXPECT_TRUE(u.upgrade_h2c);
        EXPECT_TRUE(u.first_byte_seen);
        rest.append(in, i + used, n - used);
      } else if (taken) {
        rest.append(in, i, n);
      } else {
        EXPECT_EQ(used, n);
      }
    }
    EXPECT_TRUE(taken);
    EXPECT_EQ(rest, frames);
    EXPECT_TRUE(r.ended.empty()) << "the upgraded call ends with stream 1, not at the 101";
    EXPECT_TRUE(t.opaque());
  }
}

TEST(HttpClient, UpgradeRefusedOrOtherProtocol) {
  HttpClientTracker t;
  Recorder r;
  send(t, r, "GET /up HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n");
  recv(t, r, kOk);
  send(t, r, kGet);
  recv(t, r, kOk);
  ASSERT_EQ(r.ended.size(), 2u);
  EXPECT_EQ(r.ended[0].status, 200);
  EXPECT_EQ(r.ended[1].target, "/items/7?q=secret&page=2");
  HttpClientTracker ws;
  Recorder r2;
  send(ws, r2, "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n");
  recv(ws, r2, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
  HttpCall u;
  EXPECT_FALSE(ws.take_upgraded(&u));
  ASSERT_EQ(r2.ended.size(), 1u);
  EXPECT_EQ(r2.ended[0].status, 101);
}
