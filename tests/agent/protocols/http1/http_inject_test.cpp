// HeaderInjector: whatever the kernel accepts, the program sees exactly the counts of its own bytes,
// and the wire carries exactly its bytes with the line inserted once.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "protocols/http1/http_inject.h"

using namespace txray;

namespace {

// A fake kernel with a per-call acceptance limit: takes up to `cap` bytes of each gather.
struct Wire {
  std::string bytes;
  size_t take(const iovec* v, int n, size_t cap) {
    size_t got = 0;
    for (int i = 0; i < n && got < cap; ++i) {
      size_t k = std::min(v[i].iov_len, cap - got);
      bytes.append(static_cast<const char*>(v[i].iov_base), k);
      got += k;
    }
    return got;
  }
};

const std::string kLine = "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n";

// Writes msg the way a program does (retrying with the rest after partial writes), inserting kLine at
// `at` on the first attempt that still contains it; each kernel call takes at most `cap` bytes.
std::string write_all(const std::string& msg, size_t at, size_t cap, size_t split_iov = 0) {
  HeaderInjector inj;
  Wire w;
  size_t done = 0;
  bool inserted = false;
  int guard = 0;
  while (done < msg.size() || inj.has_pending()) {
    EXPECT_LT(++guard, 10000);
    if (guard >= 10000) break;
    size_t rest = msg.size() - done;
    iovec prog[2];
    int cnt = 1;
    prog[0] = {const_cast<char*>(msg.data() + done), rest};
    if (split_iov && split_iov < rest) {
      prog[0].iov_len = split_iov;
      prog[1] = {const_cast<char*>(msg.data() + done + split_iov), rest - split_iov};
      cnt = 2;
    }
    size_t rel = (!inserted && at >= done) ? at - done : HeaderInjector::kNoInsert;
    iovec out[2 + HeaderInjector::kExtraIov];
    int k = inj.gather(prog, cnt, rel, rel == HeaderInjector::kNoInsert ? std::string_view{} : kLine, out);
    size_t accepted = w.take(out, k, cap);
    size_t mine = inj.commit(accepted);
    EXPECT_LE(mine, rest);
    if (inj.inserted()) inserted = true;
    done += mine;
    if (rest == 0 && !inj.has_pending()) break;
  }
  return w.bytes;
}

}  // namespace

TEST(HeaderInjector, AnyKernelAcceptanceGivesTheSameWireBytes) {
  std::string msg = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
  size_t at = msg.find('\n') + 1;
  std::string expected = msg.substr(0, at) + kLine + msg.substr(at);
  for (size_t cap = 1; cap <= expected.size() + 1; ++cap) {
    EXPECT_EQ(write_all(msg, at, cap), expected) << "cap " << cap;
    EXPECT_EQ(write_all(msg, at, cap, 5), expected) << "cap " << cap << " with two iovecs";
    EXPECT_EQ(write_all(msg, at, cap, at), expected) << "cap " << cap << " split at the point";
  }
}

TEST(HeaderInjector, InsertionAtTheEndOfTheBuffer) {
  std::string line = "GET /x HTTP/1.1\r\n";
  HeaderInjector inj;
  iovec prog{const_cast<char*>(line.data()), line.size()};
  iovec out[1 + HeaderInjector::kExtraIov];
  int k = inj.gather(&prog, 1, line.size(), kLine, out);
  EXPECT_EQ(k, 2);
  // the kernel takes the program's bytes and 10 of the line: the program is told all of its bytes went
  EXPECT_EQ(inj.commit(line.size() + 10), line.size());
  EXPECT_TRUE(inj.inserted());
  EXPECT_EQ(inj.pending_bytes(), kLine.size() - 10);
  // the next write sends the rest of the line first
  std::string next = "Host: h\r\n\r\n";
  iovec p2{const_cast<char*>(next.data()), next.size()};
  k = inj.gather(&p2, 1, HeaderInjector::kNoInsert, {}, out);
  EXPECT_EQ(k, 2);
  EXPECT_EQ(std::string(static_cast<char*>(out[0].iov_base), out[0].iov_len), kLine.substr(10));
  // only part of the pending bytes: 0 of the program's
  EXPECT_EQ(inj.commit(5), 0u);
  EXPECT_EQ(inj.pending_bytes(), kLine.size() - 15);
  k = inj.gather(&p2, 1, HeaderInjector::kNoInsert, {}, out);
  EXPECT_EQ(inj.commit(kLine.size() - 15 + 4), 4u);
  EXPECT_FALSE(inj.has_pending());
}

TEST(HeaderInjector, NothingReachedMeansNothingCommitted) {
  std::string msg = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
  size_t at = msg.find('\n') + 1;
  HeaderInjector inj;
  iovec prog{const_cast<char*>(msg.data()), msg.size()};
  iovec out[1 + HeaderInjector::kExtraIov];
  inj.gather(&prog, 1, at, kLine, out);
  EXPECT_EQ(inj.commit(at - 1), at - 1);
  EXPECT_FALSE(inj.inserted());
  EXPECT_FALSE(inj.has_pending());
  // exactly up to the point: the line is committed (pending as a whole)
  inj.gather(&prog, 1, at, kLine, out);
  EXPECT_EQ(inj.commit(at), at);
  EXPECT_TRUE(inj.inserted());
  EXPECT_EQ(inj.pending_bytes(), kLine.size());
}

TEST(HeaderInjector, WithoutInsertionCountsPassThrough) {
  HeaderInjector inj;
  std::string msg = "abcdef";
  iovec prog{const_cast<char*>(msg.data()), msg.size()};
  iovec out[1 + HeaderInjector::kExtraIov];
  EXPECT_EQ(inj.gather(&prog, 1, HeaderInjector::kNoInsert, {}, out), 1);
  EXPECT_EQ(inj.commit(4), 4u);
  EXPECT_FALSE(inj.inserted());
}

TEST(HeaderInjector, FormatsTheTraceparentLine) {
  uint8_t trace[16];
  for (int i = 0; i < 16; ++i) trace[i] = static_cast<uint8_t>(i);
  char buf[HeaderInjector::kMaxLine];
  size_t n = format_traceparent_line(trace, 0xfeedfacecafebeefull, buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n), "traceparent: 00-000102030405060708090a0b0c0d0e0f-feedfacecafebeef-01\r\n");
}
