// http_out: the socket glue, driven like the write/read hooks drive it, with a fake kernel that takes
// only part of each write (as a non-blocking socket with a full buffer does). Linked with the agent's
// core: real recorder, real transactions, no preload.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "protocols/dispatch/http_out.h"
#include "core/unattributed.h"
#include "core/recorder.h"
#include "protocols/tracecontext/traceparent.h"
#include "core/transaction.h"

using namespace txray;

namespace {

// The fake kernel: each call takes at most `cap` bytes; a call with `eagain_next` set fails instead.
struct Kernel {
  std::string wire;
  size_t cap = SIZE_MAX;
  bool eagain_next = false;
  int calls = 0;
};
Kernel* g_kernel = nullptr;

ssize_t fake_writev(int fd, const iovec* iov, int cnt, void* ctx) {
  ++g_kernel->calls;
  if (g_kernel->eagain_next) {
    g_kernel->eagain_next = false;
    errno = EAGAIN;
    return -1;
  }
  size_t got = 0;
  for (int i = 0; i < cnt && got < g_kernel->cap; ++i) {
    size_t k = std::min(iov[i].iov_len, g_kernel->cap - got);
    g_kernel->wire.append(static_cast<const char*>(iov[i].iov_base), k);
    got += k;
  }
  return static_cast<ssize_t>(got);
}

// One write() of the program, the way socket_hooks.cpp makes it.
ssize_t program_write(FdSlot& s, const std::string& buf, size_t off) {
  iovec v{const_cast<char*>(buf.data() + off), buf.size() - off};
  ssize_t r;
  if (http_out::write_through(&s, 3, &v, 1, fake_writev, nullptr, &r)) return r;
  r = fake_writev(3, &v, 1, nullptr);  // the plain call
  if (r > 0) {
    s.add_written(size_t(r));
    http_out::on_sent(&s, buf.data() + off, size_t(r));
  }
  return r;
}

std::vector<std::unique_ptr<Transaction>> g_done;
void keep(Transaction* t) { g_done.emplace_back(t); }

class HttpOutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_done.clear();
    tx::set_sink(keep);
    kernel = Kernel{};
    g_kernel = &kernel;
    slot = std::make_unique<FdSlot>();
    slot->kind.store(FdKind::outbound);
    http_out::on_connect(slot.get(), "127.0.0.1", 8080);
  }
  void TearDown() override { tx::set_sink(nullptr); }

  Transaction* begin() {
    Transaction* t = tx::begin("test", "api");
    tx::make_current(t);
    return t;
  }

  // Writes all of buf like a program (retrying after partial writes and EAGAIN).
  void write_all(const std::string& buf) {
    size_t off = 0;
    int guard = 0;
    while (off < buf.size()) {
      ASSERT_LT(++guard, 10000);
      ssize_t r = program_write(*slot, buf, off);
      if (r < 0) {
        ASSERT_EQ(errno, EAGAIN);
        continue;
      }
      ASSERT_LE(size_t(r), buf.size() - off);
      off += size_t(r);
    }
  }

  Kernel kernel;
  std::unique_ptr<FdSlot> slot;
};

const std::string kReq = "GET /a?x=1 HTTP/1.1\r\nHost: api:8080\r\n\r\n";
const std::string kResp = "HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc";

}  // namespace

TEST_F(HttpOutTest, InsertsTraceparentAndRecordsTheCall) {
  Transaction* t = begin();
  write_all(kReq);
  http_out::on_received(slot.get(), kResp.data(), kResp.size());
  tx::end(t, 200, "");

  // The wire: the request with one traceparent line after the request line.
  size_t at = kReq.find('\n') + 1;
  ASSERT_EQ(kernel.wire.size(), kReq.size() + 70);
  EXPECT_EQ(kernel.wire.substr(0, at), kReq.substr(0, at));
  EXPECT_EQ(kernel.wire.substr(at + 70), kReq.substr(at));
  TraceParent tp;
  std::string line = kernel.wire.substr(at, 70);
  ASSERT_EQ(line.substr(0, 13), "traceparent: ");
  ASSERT_TRUE(parse_traceparent(line.substr(13, 55), tp));
  EXPECT_EQ(tp.flags, 3);  // a trace the agent started: sampled (rate 1) and random
  // The program's bytes are counted, not the inserted ones.
  EXPECT_EQ(slot->bytes_written.load(), kReq.size());

  ASSERT_EQ(g_done.size(), 1u);
  const Transaction& done = *g_done[0];
  EXPECT_EQ(std::memcmp(done.trace_id, tp.trace_id, 16), 0);
  const Step* call = nullptr;
  for (const Step& s : done.steps)
    if (s.kind == StepKind::HTTP_CALL) call = &s;
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->id, tp.parent_id);  // the callee's parent span id is this row's id
  EXPECT_EQ(call->status, 201);
  EXPECT_EQ(call->text, "http://api:8080/a?x=?");
  EXPECT_EQ(call->bytes_written, kReq.size());
  EXPECT_EQ(call->bytes_read, kResp.size());
  EXPECT_EQ(done.totals.call_count, 1u);
}

TEST_F(HttpOutTest, PartialWritesAndEagainKeepTheProgramsCountsExact) {
  size_t at = kReq.find('\n') + 1;
  for (size_t cap = 1; cap <= kReq.size() + 71; cap += 3) {
    for (bool eagain : {false, true}) {
      SetUp();
      kernel.cap = cap;
      Transaction* t = begin();
      size_t off = 0;
      int guard = 0;
      while (off < kReq.size()) {
        ASSERT_LT(++guard, 10000);
        kernel.eagain_next = eagain && guard % 2 == 0;  // every other attempt finds the buffer full
        ssize_t r = program_write(*slot, kReq, off);
        if (r < 0) {
          ASSERT_EQ(errno, EAGAIN);
          continue;
        }
        ASSERT_GT(r, 0) << "cap " << cap;
        off += size_t(r);
      }
      // Nothing can stay pending: the insertion point is before the head's last bytes, so the
      // program's own later write always carries what the kernel did not take of the line.
      http_out::on_received(slot.get(), kResp.data(), kResp.size());
      tx::end(t, 200, "");
      ASSERT_EQ(kernel.wire.size(), kReq.size() + 70) << "cap " << cap;
      EXPECT_EQ(kernel.wire.substr(0, at), kReq.substr(0, at));
      EXPECT_EQ(kernel.wire.substr(at + 70), kReq.substr(at));
      EXPECT_EQ(slot->bytes_written.load(), kReq.size());
      ASSERT_EQ(g_done.size(), 1u);
      int calls = 0;
      for (const Step& s : g_done[0]->steps) calls += s.kind == StepKind::HTTP_CALL;
      EXPECT_EQ(calls, 1) << "cap " << cap;
      TearDown();
    }
  }
}

// A call made outside any request is an unattributed step (docs/agent.md): it is recorded in the
// process's container and still carries a traceparent, so that its callee is linked; the program sees
// only its own bytes.
TEST_F(HttpOutTest, CallOutsideARequestIsUnattributedAndStillPropagates) {
  write_all(kReq);
  EXPECT_NE(kernel.wire, kReq);
  EXPECT_NE(kernel.wire.find("traceparent: 00-"), std::string::npos);
  Transaction* c = unattr::container();
  ASSERT_NE(c, nullptr);
  std::lock_guard<std::mutex> l(c->mu);
  bool found = false;
  for (const Step& s : c->steps) found |= s.kind == StepKind::HTTP_CALL;
  EXPECT_TRUE(found);
}

TEST_F(HttpOutTest, OtherProtocolsAreLeftAlone) {
  Transaction* t = begin();
  std::string pg("\0\0\0\x08\x04\xd2\x16\x2f", 8);  // a PostgreSQL SSLRequest
  write_all(pg);
  write_all(kReq);  // later bytes that look like HTTP do not make it HTTP
  tx::end(t, 200, "");
  EXPECT_EQ(kernel.wire, pg + kReq);
  for (const Step& s : g_done.at(0)->steps) EXPECT_NE(s.kind, StepKind::HTTP_CALL);
}

TEST_F(HttpOutTest, CloseEndsAnUnfinishedCallWithAnError) {
  Transaction* t = begin();
  write_all(kReq);
  http_out::on_close(slot.get(), -1);
  tx::end(t, 200, "");
  const Step* call = nullptr;
  for (const Step& s : g_done.at(0)->steps)
    if (s.kind == StepKind::HTTP_CALL) call = &s;
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->status, 0);
  EXPECT_FALSE(call->error.empty());
}

TEST_F(HttpOutTest, RequestNeverSentEndsItsRowFailed) {
  Transaction* t = begin();
  kernel.eagain_next = true;
  EXPECT_EQ(program_write(*slot, kReq, 0), -1);
  EXPECT_EQ(errno, EAGAIN);
  http_out::on_close(slot.get(), -1);  // the program gives up
  rec::add(t, StepKind::MESSAGE, "after");
  tx::end(t, 200, "");
  const Transaction& done = *g_done.at(0);
  int call_index = -1;
  for (size_t i = 0; i < done.steps.size(); ++i)
    if (done.steps[i].kind == StepKind::HTTP_CALL) call_index = int(i);
  ASSERT_GE(call_index, 0);
  EXPECT_EQ(done.steps[size_t(call_index)].error, "connection closed before the request was sent");
  // the failed row is closed: later rows do not nest under it
  for (const Step& s : done.steps) {
    if (s.kind == StepKind::MESSAGE) {
      EXPECT_EQ(s.parent, -1);
    }
  }
  EXPECT_TRUE(kernel.wire.empty());
}

TEST_F(HttpOutTest, RequestLineSplitOverIovecs) {
  Transaction* t = begin();
  std::string a = "GET /long/pa", b = "th HTTP/1.1\r\nHost: h\r\n", c = "\r\n";
  iovec v[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  ssize_t r = -2;
  ASSERT_TRUE(http_out::write_through(slot.get(), 3, v, 3, fake_writev, nullptr, &r));
  EXPECT_EQ(r, ssize_t(a.size() + b.size() + c.size()));
  tx::end(t, 200, "");
  std::string req = a + b + c;
  size_t at = req.find('\n') + 1;
  ASSERT_EQ(kernel.wire.size(), req.size() + 70);
  EXPECT_EQ(kernel.wire.substr(at, 13), "traceparent: ");
  EXPECT_EQ(kernel.wire.substr(0, at) + kernel.wire.substr(at + 70), req);
}
