// HTTP/1.x parsing: request heads, response framing over pieces of every size.
#include "protocols/http1/http_parse.h"

#include <gtest/gtest.h>

#include <string>

using namespace txray::http;

namespace {

// Feeds `data` to a ResponseTracker `step` bytes at a time; returns the bytes it took.
size_t feed_in_pieces(ResponseTracker& r, const std::string& data, size_t step) {
  size_t used = 0;
  for (size_t i = 0; i < data.size() && !r.done(); i += step) {
    size_t n = std::min(step, data.size() - i);
    used += r.feed(data.data() + i, n);
  }
  return used;
}

}  // namespace

TEST(HttpParse, RequestHeadFields) {
  std::string head =
      "GET /files/a.txt?x=1&y=2 HTTP/1.1\r\nHost: example\r\nUser-Agent: curl/7.88\r\n"
      "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n";
  ASSERT_EQ(find_head_end(head, 0), head.size());
  RequestHead h;
  ASSERT_TRUE(parse_request_head(head, &h));
  EXPECT_EQ(h.method, "GET");
  EXPECT_EQ(h.path, "/files/a.txt");
  EXPECT_EQ(h.query, "x=1&y=2");
  EXPECT_EQ(h.host, "example");
  EXPECT_EQ(h.user_agent, "curl/7.88");
  EXPECT_EQ(h.traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
}

// agent.fuzz_http_inbound: a line starting with a space parsed as a request with an empty method (the
// connection tracker asks looks_like_request first, which refuses it; the parser now refuses it too).
TEST(HttpParse, RequestLineWithoutMethodIsRefused) {
  RequestHead h;
  EXPECT_FALSE(parse_request_head(" / HTTP/1.1\r\n\r\n", &h));
}

TEST(HttpParse, HeadEndFoundAcrossSplitPieces) {
  std::string buf = "GET / HTTP/1.1\r\nHost: a\r\n\r";
  EXPECT_EQ(find_head_end(buf, 0), 0u);
  size_t scanned = buf.size();
  buf += "\n";
  EXPECT_EQ(find_head_end(buf, scanned), buf.size());
}

TEST(HttpParse, RecognizesHttpAndRejectsOtherProtocols) {
  EXPECT_EQ(looks_like_request("GE"), 0);
  EXPECT_EQ(looks_like_request("GET /x"), 0);
  EXPECT_EQ(looks_like_request("GET /x HTTP/1.1\r\n"), 1);
  EXPECT_EQ(looks_like_request("\x16\x03\x01\x02"), -1);              // TLS client hello
  EXPECT_EQ(looks_like_request("PRI * HTTP/2.0\r\n"), -1);            // HTTP/2 preface
  EXPECT_EQ(looks_like_request("get / HTTP/1.1\r\n"), -1);            // methods are upper case
  EXPECT_EQ(looks_like_request("SSH-2.0-OpenSSH_9.2\r\n"), -1);
}

TEST(HttpParse, ContentLengthResponseInEveryPieceSize) {
  std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
  for (size_t step = 1; step <= resp.size(); ++step) {
    ResponseTracker r;
    r.reset(false);
    EXPECT_EQ(feed_in_pieces(r, resp + "NEXT", step), resp.size()) << "step " << step;
    EXPECT_TRUE(r.done());
    EXPECT_EQ(r.status(), 200);
  }
}

TEST(HttpParse, ChunkedResponseInEveryPieceSize) {
  std::string resp =
      "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: x\r\n\r\n";
  for (size_t step = 1; step <= resp.size(); ++step) {
    ResponseTracker r;
    r.reset(false);
    size_t used = feed_in_pieces(r, resp, step);
    EXPECT_TRUE(r.done()) << "step " << step;
    EXPECT_EQ(used, resp.size()) << "step " << step;
    EXPECT_EQ(r.status(), 201);
  }
}

TEST(HttpParse, ChunkedNotDoneBeforeLastChunk) {
  ResponseTracker r;
  r.reset(false);
  std::string part = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";
  r.feed(part.data(), part.size());
  EXPECT_FALSE(r.done());
  r.feed("0\r\n\r\n", 5);
  EXPECT_TRUE(r.done());
}

TEST(HttpParse, HeadRequestAnd204And304HaveNoBody) {
  for (auto [head_req, resp] : {std::pair{true, "HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n"},
                                std::pair{false, "HTTP/1.1 204 No Content\r\n\r\n"},
                                std::pair{false, "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"}}) {
    ResponseTracker r;
    r.reset(head_req);
    std::string s = resp;
    EXPECT_EQ(r.feed(s.data(), s.size()), s.size());
    EXPECT_TRUE(r.done()) << s;
  }
}

TEST(HttpParse, InterimResponsesAreNotFinal) {
  ResponseTracker r;
  r.reset(false);
  std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
  r.feed(cont.data(), cont.size());
  EXPECT_FALSE(r.done());
  EXPECT_FALSE(r.head_done());
  std::string fin = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  r.feed(fin.data(), fin.size());
  EXPECT_TRUE(r.done());
  EXPECT_EQ(r.status(), 200);
}

TEST(HttpParse, NoLengthMeansUntilClose) {
  ResponseTracker r;
  r.reset(false);
  std::string s = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome body";
  EXPECT_EQ(r.feed(s.data(), s.size()), s.size());
  EXPECT_FALSE(r.done());
  EXPECT_TRUE(r.until_close());
}

TEST(HttpParse, SendfileBodyBytesCountAgainstContentLength) {
  ResponseTracker r;
  r.reset(false);
  std::string s = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
  r.feed(s.data(), s.size());
  r.feed_opaque(600);
  EXPECT_FALSE(r.done());
  r.feed_opaque(400);
  EXPECT_TRUE(r.done());
}

TEST(HttpParse, GarbageResponseIsGivenUpUntilClose) {
  ResponseTracker r;
  r.reset(false);
  std::string s = "NOT HTTP AT ALL\r\n\r\n";
  r.feed(s.data(), s.size());
  EXPECT_TRUE(r.gave_up());
  EXPECT_TRUE(r.until_close());
}

// Trace headers: the first line of each and how many lines; the others found again by header_lines.
TEST(HttpParse, CountsTraceHeaderLinesInAnyCase) {
  std::string head =
      "GET / HTTP/1.1\r\nTraceParent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
      "TRACESTATE: vendor1=a\r\nHost: x\r\ntracestate:  \r\nbaggage: k=v\r\ntracestate: vendor2=b \r\n"
      "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01\r\n\r\n";
  RequestHead h;
  ASSERT_TRUE(parse_request_head(head, &h));
  EXPECT_EQ(h.traceparents, 2);
  EXPECT_EQ(h.tracestates, 3);
  EXPECT_EQ(h.baggages, 1);
  EXPECT_EQ(h.traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(h.tracestate, "vendor1=a");
  EXPECT_EQ(h.baggage, "k=v");
  std::string_view lines[4];
  ASSERT_EQ(header_lines(head, "tracestate", lines, 4), 3u);
  EXPECT_EQ(lines[0], "vendor1=a");
  EXPECT_EQ(lines[1], "");
  EXPECT_EQ(lines[2], "vendor2=b");
  EXPECT_EQ(header_lines(head, "tracestate", lines, 1), 3u);  // counted past max
}

TEST(HttpParse, NoTraceHeadersNoCounts) {
  RequestHead h;
  ASSERT_TRUE(parse_request_head("GET / HTTP/1.1\r\nHost: x\r\nBar: 1\r\nTrace: 2\r\n\r\n", &h));
  EXPECT_EQ(h.traceparents | h.tracestates | h.baggages, 0);
}
