// The runtime hint protocol's parser (agent/hints/hint_protocol.h): what the shims send, and the rest
// refused. What the agent does with each message is in tests/agent/core/attribution_test.cpp.
#include "hints/hint_protocol.h"

#include <gtest/gtest.h>

#include <cstring>

namespace txray {
namespace {

TEST(HintProtocol, ParsesWhatTheShimsSendAndRejectsTheRest) {
  hint::Message m;
  EXPECT_TRUE(hint::parse("R12:3", 32, &m));
  EXPECT_EQ(m.op, 'R');
  EXPECT_EQ(m.fd, 12);
  EXPECT_EQ(m.n, 3u);
  EXPECT_TRUE(hint::parse("O7:12:00000000000000ff", 32, &m));
  EXPECT_EQ(m.fd, 7);
  EXPECT_EQ(m.req_fd, 12);
  EXPECT_EQ(m.token, 255u);
  EXPECT_TRUE(hint::parse("C", 1, &m));
  EXPECT_EQ(m.fd, -1);
  EXPECT_TRUE(hint::parse("E5", 32, &m));
  EXPECT_EQ(m.token, 0u);
  EXPECT_TRUE(hint::parse("B16384", 32, &m));
  EXPECT_EQ(m.op, 'B');
  EXPECT_EQ(m.n, 16384u);
  EXPECT_EQ(m.list, 0u);
  EXPECT_TRUE(hint::parse("B16384:256", 32, &m));
  EXPECT_EQ(m.n, 16384u);
  EXPECT_EQ(m.list, 256u);
  EXPECT_TRUE(hint::parse("U", 32, &m));
  for (const char* bad : {"", "X", "R", "R-1", "R99999999999", "E5:12", "O7:12", "A123", "Lx", "R5:", "O:1:0", "B",
                          "B0", "B-1", "B16:", "B16:0", "B16:x", "B:4", "Ux"})
    EXPECT_FALSE(hint::parse(bad, strlen(bad), &m)) << bad;
  char unterminated[4] = {'R', '1', '2', '3'};
  EXPECT_TRUE(hint::parse(unterminated, 4, &m));  // the length bounds the message
  EXPECT_EQ(m.fd, 123);
}


}  // namespace
}  // namespace txray
