#include <gtest/gtest.h>

#include <string>

#include "protocols/tracecontext/traceparent.h"

using namespace txray;

namespace {
const char* kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
}

TEST(Traceparent, ParsesTheSpecExample) {
  TraceParent tp;
  ASSERT_TRUE(parse_traceparent(kValid, tp));
  EXPECT_EQ(tp.trace_id[0], 0x4b);
  EXPECT_EQ(tp.trace_id[15], 0x36);
  EXPECT_EQ(tp.parent_id, 0x00f067aa0ba902b7ull);
  EXPECT_EQ(tp.flags, 1);
}

TEST(Traceparent, FormatRoundTrips) {
  TraceParent tp;
  ASSERT_TRUE(parse_traceparent(kValid, tp));
  char out[kTraceParentLen];
  format_traceparent(tp.trace_id, tp.parent_id, tp.flags, out);
  EXPECT_EQ(std::string(out, kTraceParentLen), kValid);
}

TEST(Traceparent, AllowsSurroundingWhitespace) {
  TraceParent tp;
  EXPECT_TRUE(parse_traceparent(std::string(" \t") + kValid + " ", tp));
}

TEST(Traceparent, RejectsInvalidValues) {
  TraceParent tp;
  EXPECT_FALSE(parse_traceparent("", tp));
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", tp));
  // uppercase hex is not allowed
  EXPECT_FALSE(parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", tp));
  // all-zero ids
  EXPECT_FALSE(parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01", tp));
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", tp));
  // version ff is invalid; version 00 must be exactly 55 characters
  EXPECT_FALSE(parse_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tp));
  EXPECT_FALSE(parse_traceparent(std::string(kValid) + "-xx", tp));
  // wrong separators
  EXPECT_FALSE(parse_traceparent("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tp));
}

TEST(Traceparent, AcceptsAFutureVersionWithMoreFields) {
  TraceParent tp;
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", tp));
  EXPECT_FALSE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", tp));
}

TEST(Traceparent, HexHelpers) {
  char s[16];
  hex_span_id(0xabcdef0123456789ull, s);
  EXPECT_EQ(std::string(s, 16), "abcdef0123456789");
  hex_span_id(1, s);
  EXPECT_EQ(std::string(s, 16), "0000000000000001");
}

// Level 2 §3.2 / §4.3, the cases of the versioning rules.
TEST(Traceparent, VersionRules) {
  TraceParent tp;
  const std::string ids = "-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  EXPECT_TRUE(parse_traceparent("cc" + ids, tp));                       // a higher version, 55 characters
  EXPECT_TRUE(parse_traceparent("cc" + ids + "-what-the-future-will-be-like", tp));
  EXPECT_FALSE(parse_traceparent("cc" + ids + ".what-the-future-will-be-like", tp));
  EXPECT_FALSE(parse_traceparent("00" + ids + "-what-the-future-will-be-like", tp));  // 00: exactly 55
  EXPECT_FALSE(parse_traceparent("0g" + ids, tp));
  EXPECT_FALSE(parse_traceparent("Cc" + ids, tp));
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", tp));
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", tp));   // 31 hex
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01", tp));   // 15 hex
  EXPECT_FALSE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", tp));
  EXPECT_TRUE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09", tp));  // unknown bits
  EXPECT_EQ(tp.flags, 9);
}
