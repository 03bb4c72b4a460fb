// tracestate (Trace Context Level 2 §3.3) and baggage values, and what a transaction makes of a
// request's trace headers (context.h): joined or new trace, flags, the lists kept or dropped.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/transaction.h"
#include "protocols/tracecontext/context.h"

using namespace txray;

namespace {

const char* kTp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

ListResult ts(std::vector<std::string_view> lines, std::string& out) {
  return combine_tracestate(lines.data(), lines.size(), out);
}

std::string members(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  return s;
}

}  // namespace

TEST(TraceState, KeepsMembersInOrderAcrossLines) {
  std::string out;
  EXPECT_EQ(ts({"vendor1=a,vendor2=b"}, out), ListResult::kept);
  EXPECT_EQ(out, "vendor1=a,vendor2=b");
  EXPECT_EQ(ts({"foo=1", "bar=2, baz=3"}, out), ListResult::kept);
  EXPECT_EQ(out, "foo=1,bar=2,baz=3");
}

TEST(TraceState, EmptyMembersAndWhitespaceAreLeftOut) {
  std::string out;
  EXPECT_EQ(ts({"", " ,foo=1 ,\t, bar=2 ", ","}, out), ListResult::kept);
  EXPECT_EQ(out, "foo=1,bar=2");
  EXPECT_EQ(ts({"", " , "}, out), ListResult::empty);
  EXPECT_EQ(out, "");
}

TEST(TraceState, KeyGrammar) {
  EXPECT_TRUE(valid_tracestate_member("a=1"));
  EXPECT_TRUE(valid_tracestate_member("a0_-*/=1"));
  EXPECT_TRUE(valid_tracestate_member("0tenant@vendor=1"));     // a tenant id may start with a digit
  EXPECT_TRUE(valid_tracestate_member("t@v_-*/9=1"));
  EXPECT_FALSE(valid_tracestate_member("0a=1"));                 // a simple key may not
  EXPECT_FALSE(valid_tracestate_member("Foo=1"));                // uppercase
  EXPECT_FALSE(valid_tracestate_member("foo.bar=1"));
  EXPECT_FALSE(valid_tracestate_member("t@0v=1"));               // system id starts with a letter
  EXPECT_FALSE(valid_tracestate_member("@v=1"));
  EXPECT_FALSE(valid_tracestate_member("t@=1"));
  EXPECT_FALSE(valid_tracestate_member("a@b@c=1"));
  EXPECT_FALSE(valid_tracestate_member("=1"));
  EXPECT_FALSE(valid_tracestate_member("foo"));
  EXPECT_TRUE(valid_tracestate_member(std::string(256, 'z') + "=1"));
  EXPECT_FALSE(valid_tracestate_member(std::string(257, 'z') + "=1"));
  EXPECT_TRUE(valid_tracestate_member(std::string(241, 't') + "@" + std::string(14, 'v') + "=1"));
  EXPECT_FALSE(valid_tracestate_member(std::string(242, 't') + "@v=1"));
  EXPECT_FALSE(valid_tracestate_member("t@" + std::string(15, 'v') + "=1"));
}

TEST(TraceState, ValueGrammar) {
  EXPECT_TRUE(valid_tracestate_member("a= x y"));         // spaces inside, not at the end
  EXPECT_FALSE(valid_tracestate_member("a=x "));
  EXPECT_FALSE(valid_tracestate_member("a="));
  EXPECT_FALSE(valid_tracestate_member("a=x=y"));
  EXPECT_FALSE(valid_tracestate_member("a=\x7f"));
  EXPECT_FALSE(valid_tracestate_member("a=\t1"));
  EXPECT_TRUE(valid_tracestate_member("a=" + std::string(256, 'v')));
  EXPECT_FALSE(valid_tracestate_member("a=" + std::string(257, 'v')));
}

TEST(TraceState, BrokenListIsDroppedWhole) {
  std::string out = "old";
  EXPECT_EQ(ts({"foo=1,Bar=2"}, out), ListResult::dropped);
  EXPECT_EQ(out, "");
  EXPECT_EQ(ts({"foo=1", "foo=2"}, out), ListResult::dropped);  // a key twice
  EXPECT_EQ(ts({"foo=1,bar"}, out), ListResult::dropped);
}

TEST(TraceState, ThirtyTwoMembersAtMost) {
  std::string out;
  EXPECT_EQ(ts({members(32)}, out), ListResult::kept);
  EXPECT_EQ(out, members(32));
  EXPECT_EQ(ts({members(33)}, out), ListResult::dropped);
  EXPECT_EQ(ts({members(16), ",,", members(32).substr(members(16).size() + 1)}, out), ListResult::kept);
}

TEST(TraceState, LongListIsTruncatedLongMembersFirst) {
  // 3 short members, one of 200 characters, then enough short ones to pass 512.
  std::string big = "big=" + std::string(196, 'x');
  std::string list = "a=1,b=2," + big + ",c=3";
  for (int i = 0; i < 25; ++i) list += ",m" + std::to_string(i) + "=" + std::string(10, 'v');
  ASSERT_GT(list.size(), kMaxTraceState);
  std::string out;
  EXPECT_EQ(ts({list}, out), ListResult::truncated);
  EXPECT_LE(out.size(), kMaxTraceState);
  EXPECT_EQ(out.find("big="), std::string::npos);
  EXPECT_EQ(out.substr(0, 12), "a=1,b=2,c=3,");
  // Without the long one it fits: nothing else is cut.
  EXPECT_NE(out.find("m24="), std::string::npos);
}

TEST(Baggage, JoinedUnchanged) {
  std::string out;
  std::vector<std::string_view> l = {"userId=alice, serverNode=DF%2028", "isProduction=false;p=1"};
  EXPECT_EQ(combine_baggage(l.data(), l.size(), out), ListResult::kept);
  EXPECT_EQ(out, "userId=alice, serverNode=DF%2028,isProduction=false;p=1");
  std::string longv(kMaxBaggage + 1, 'b');
  std::vector<std::string_view> l2 = {longv};
  EXPECT_EQ(combine_baggage(l2.data(), 1, out), ListResult::dropped);
  std::vector<std::string_view> l3 = {"a=\x01"};
  EXPECT_EQ(combine_baggage(l3.data(), 1, out), ListResult::dropped);
}

TEST(Context, OneValidTraceparentJoinsWithItsFlagsAndTracestate) {
  Transaction t;
  std::string_view lines[] = {"vendor1=a", "vendor2=b"};
  std::string_view bg[] = {"k=v"};
  InboundContext in{kTp, 1, lines, 2, bg, 1};
  accept_context(&t, in);
  EXPECT_EQ(t.trace_id[0], 0x4b);
  EXPECT_EQ(t.parent_span_id, 0x00f067aa0ba902b7ull);
  EXPECT_EQ(t.trace_flags, 1);
  EXPECT_EQ(t.tracestate, "vendor1=a,vendor2=b");
  EXPECT_EQ(t.baggage, "k=v");
  OutboundContext o;
  ASSERT_TRUE(outbound_context(&t, &o));
  EXPECT_EQ(o.flags, 1);
  char line[kMaxContextLines];
  size_t n = format_context_lines(o, 0x1122334455667788ull, 0, line, sizeof line);
  EXPECT_EQ(std::string(line, n),
            "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-1122334455667788-01\r\n"
            "tracestate: vendor1=a,vendor2=b\r\nbaggage: k=v\r\n");
  n = format_context_lines(o, 0x1122334455667788ull, kOwnTraceState | kOwnBaggage, line, sizeof line);
  EXPECT_EQ(n, 70u);
  EXPECT_EQ(format_context_lines(o, 1, 0, line, 100), 0u);  // no room: nothing
}

TEST(Context, RandomFlagKeptUnknownFlagsCleared) {
  Transaction t;
  InboundContext in{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", 1};
  accept_context(&t, in);
  EXPECT_EQ(t.trace_flags, 3);
  InboundContext in2{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02", 1};
  Transaction u;
  accept_context(&u, in2);
  EXPECT_EQ(u.trace_flags, 2);
}

TEST(Context, TwoTraceparentsOrAnInvalidOneStartANewTraceWithoutTracestate) {
  std::string_view lines[] = {"vendor1=a"};
  for (InboundContext in : {InboundContext{kTp, 2, lines, 1}, InboundContext{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", 1, lines, 1},
                            InboundContext{"", 0, lines, 1}}) {
    Transaction t;
    t.trace_id[0] = 0x77;  // the transaction's own id stays
    accept_context(&t, in);
    EXPECT_EQ(t.trace_id[0], 0x77);
    EXPECT_EQ(t.parent_span_id, 0u);
    EXPECT_EQ(t.trace_flags, -1);
    EXPECT_EQ(t.tracestate, "");
  }
}

TEST(Context, BrokenTracestateIsDroppedAndSaidSo) {
  Transaction t;
  std::string_view lines[] = {"foo=1,foo=2"};
  accept_context(&t, InboundContext{kTp, 1, lines, 1});
  EXPECT_EQ(t.parent_span_id, 0x00f067aa0ba902b7ull);
  EXPECT_EQ(t.tracestate, "");
  ASSERT_EQ(t.attrs.size(), 1u);
  EXPECT_EQ(t.attrs[0].key, "tracestate_dropped");
}

TEST(Context, OwnFlagsFollowTheSampleRate) {
  uint8_t low[16] = {}, high[16];
  for (auto& b : high) b = 0xff;
  EXPECT_EQ(own_trace_flags(low, 1.0), kFlagRandom | kFlagSampled);
  EXPECT_EQ(own_trace_flags(high, 1.0), kFlagRandom | kFlagSampled);
  EXPECT_EQ(own_trace_flags(low, 0.5), kFlagRandom | kFlagSampled);
  EXPECT_EQ(own_trace_flags(high, 0.5), kFlagRandom);
  EXPECT_EQ(own_trace_flags(low, 0.0), kFlagRandom);
}

TEST(Context, HpackFieldsDecodeToTheHeaders) {
  OutboundContext o;
  for (int i = 0; i < 16; ++i) o.trace_id[i] = uint8_t(i + 1);
  o.flags = 3;
  std::string longts = "k=" + std::string(200, 'v');  // a length past the 7-bit prefix
  o.tracestate = longts;
  o.baggage = "a=b";
  char out[kMaxContextFields];
  size_t n = hpack_context(o, 0xabcull, 0, out, sizeof out);
  ASSERT_GT(n, 0u);
  // traceparent literal: 0x00, 11, name, 55, value
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 11);
  EXPECT_EQ(std::string(out + 2, 11), "traceparent");
  EXPECT_EQ(out[13], 55);
  EXPECT_EQ(std::string(out + 14, 55), "00-0102030405060708090a0b0c0d0e0f10-0000000000000abc-03");
  size_t k = 69;
  EXPECT_EQ(out[k], 0);
  EXPECT_EQ(out[k + 1], 10);
  EXPECT_EQ(std::string(out + k + 2, 10), "tracestate");
  // 202 = 127 + 75: 0x7f then 75
  EXPECT_EQ(uint8_t(out[k + 12]), 0x7f);
  EXPECT_EQ(uint8_t(out[k + 13]), 75);
  EXPECT_EQ(std::string(out + k + 14, 202), longts);
  k += 14 + 202;
  EXPECT_EQ(std::string(out + k, 1 + 1 + 7 + 1 + 3), std::string("\0\7baggage\3a=b", 13));
  EXPECT_EQ(n, k + 13);
}
