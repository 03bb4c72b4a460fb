// FastCGI, client side: call rows of the calling transaction, and the PARAMS record of trace context
// the client inserts — checked against the real inbound tracker (what php-fpm's agent makes of the
// bytes) and, byte for byte, against the program's own bytes, under kernels that take any number of
// bytes per write.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "core/counters.h"
#include "core/fd_table.h"
#include "protocols/fastcgi/fastcgi_client.h"
#include "protocols/fastcgi/fastcgi_records.h"
#include "protocols/fastcgi/splice.h"
#include "protocols/http1/http_conn.h"
#include "fcgi_bytes.h"
#include "support/test_support.h"

using namespace txray;
using namespace txray::test::fcgi_bytes;
using txray::test::Collected;
using txray::test::FakeClock;

namespace {

std::string gathered(const iovec* v, int k) {
  std::string s;
  for (int i = 0; i < k; ++i) s.append(static_cast<const char*>(v[i].iov_base), v[i].iov_len);
  return s;
}

// The write hook's loop (http_out.cpp: wire_write_through) with a kernel that takes at most `cap` bytes
// per call. Returns the wire bytes; the program's own counts are checked to add up to its bytes.
std::string write_all(WireClient& c, const std::string& prog, size_t cap, std::mt19937* rng = nullptr) {
  std::string wire;
  size_t off = 0;
  while (off < prog.size()) {
    // the program's rest, in one or two iovecs
    iovec iov[2];
    int cnt = 1;
    size_t rest = prog.size() - off;
    size_t cut = rng && rest > 1 ? 1 + (*rng)() % (rest - 1) : rest;
    iov[0] = {const_cast<char*>(prog.data() + off), cut};
    if (cut < rest) iov[1] = {const_cast<char*>(prog.data() + off + cut), rest - cut}, cnt = 2;
    iovec out[2 + WireClient::kWriteExtra];
    int k = c.plan_write(iov, cnt, out);
    size_t mine;
    if (k == 0) {
      mine = std::min(cap, rest);
      wire.append(prog, off, mine);
    } else {
      for (;;) {
        std::string lay = gathered(out, k);
        size_t r = std::min(cap, lay.size());
        wire.append(lay, 0, r);
        mine = c.commit_write(r);
        if (mine > 0 || r == 0) break;
        k = c.plan_write(iov, cnt, out);
        if (k == 0) std::copy(iov, iov + cnt, out), k = cnt;
      }
    }
    EXPECT_LE(mine, rest);
    c.on_sent(prog.data() + off, mine);
    off += mine;
  }
  return wire;
}

class FcgiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeClock::install();
    Collected::install();
    counters().reset();
    fcgi::set_propagate_for_test(1);
    front = tx::begin("GET /front", "http");
    tx::make_current(front);
    env.slot = &slot;
    env.peer = "127.0.0.1:9000";
    env.owner = &owner;
    client.reset(fcgi::make_client(env));
  }
  void TearDown() override {
    FakeClock::uninstall();
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
    fcgi::set_propagate_for_test(-1);
  }
  // Ends the front's transaction and returns it.
  const Transaction& end_front() {
    tx::end(front, 200, "");
    return *Collected::txs.back();
  }
  static const Step* call_row(const Transaction& t, size_t nth = 0) {
    for (const Step& s : t.steps)
      if (s.kind == StepKind::HTTP_CALL && nth-- == 0) return &s;
    return nullptr;
  }
  // What the application's agent makes of the wire: its transactions (ended by a canned answer). On a
  // thread of its own, as in the application's process: this thread's request stays the front's.
  std::vector<std::unique_ptr<Transaction>> serve(const std::string& wire, uint16_t id = 1) {
    std::vector<std::unique_ptr<Transaction>> mine;
    size_t before = Collected::txs.size();
    std::thread([&] {
      HttpConn srv;
      srv.reset("unix", 9);
      srv.on_read(wire.data(), wire.size());
      std::string answer = stdout_(id, "\r\n") + end(id);
      srv.on_write(answer.data(), answer.size());
    }).join();
    for (size_t i = before; i < Collected::txs.size(); ++i) mine.push_back(std::move(Collected::txs[i]));
    Collected::txs.resize(before);
    return mine;
  }
  FdSlot slot;
  ReqRef owner;
  WireEnv env;
  std::unique_ptr<WireClient> client;
  Transaction* front = nullptr;
};

const std::string kProgram = begin(1) + params(1, nginx_params("GET", "/index.php?user=alice")) + stdin_(1, "");

}  // namespace

TEST(FcgiSplice, EveryAcceptedCountMapsBackToTheProgramsBytes) {
  const std::string prog = "AAAAhhhhBBBBBBBB";
  const std::string r = "<inserted>";
  const std::string want = "AAAA" + r + "hhhhBBBBBBBB";  // an insertion at 4
  for (size_t cap = 1; cap <= want.size(); ++cap) {
    Splicer sp;
    std::string wire;
    size_t off = 0;
    bool inserted = false;
    while (off < prog.size()) {
      sp.begin();
      if (!inserted && off <= 4) sp.add(4 - off, 0, r.data(), r.size(), 7);
      iovec iov{const_cast<char*>(prog.data() + off), prog.size() - off};
      iovec out[Splicer::max_out(1)];
      int k = sp.gather(&iov, 1, out);
      std::string lay = gathered(out, k);
      size_t acc = std::min(cap, lay.size());
      wire += lay.substr(0, acc);
      uint32_t tags[Splicer::kMaxEdits];
      size_t nt;
      size_t mine = sp.commit(acc, tags, &nt);
      if (nt) {
        EXPECT_EQ(tags[0], 7u);
        inserted = true;
      }
      off += mine;
    }
    EXPECT_FALSE(sp.has_pending()) << cap;
    EXPECT_EQ(wire, want) << "cap " << cap;
  }
}

TEST(FcgiSplice, ReplacementAcrossTwoIovecsIsNotMade) {
  Splicer sp;
  std::string a = "HEAD", b = "ERbody";
  sp.add(2, 4, "XXXX++", 6, 1);  // replaces "ADER", which spans both iovecs
  iovec iov[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
  iovec out[Splicer::max_out(2)];
  int k = sp.gather(iov, 2, out);
  EXPECT_EQ(gathered(out, k), a + b);
  uint32_t tags[Splicer::kMaxEdits];
  size_t nt;
  EXPECT_EQ(sp.commit(a.size() + b.size(), tags, &nt), a.size() + b.size());
  EXPECT_EQ(nt, 0u);
}

TEST(FcgiRequestRecognition, BeginRequestOnly) {
  EXPECT_TRUE(fcgi::looks_like_request(kProgram.data(), 24));
  EXPECT_FALSE(fcgi::looks_like_request(kProgram.data(), 7));
  EXPECT_TRUE(fcgi::looks_like_request(kProgram.data(), 8));  // a first write of the header alone
  EXPECT_FALSE(fcgi::looks_like_request("GET / HTTP/1.1\r\nHost: a\r\n", 24));
  std::string bad = kProgram;
  bad[12] = 1;  // a reserved byte of the body
  EXPECT_FALSE(fcgi::looks_like_request(bad.data(), 24));
  std::string pg = std::string("\0\0\0\x4f\0\x03\0\0user\0", 13);
  EXPECT_FALSE(fcgi::looks_like_request(pg.data(), pg.size()));
}

// Found by fuzzing (agent_fuzz_fastcgi_client): bytes the client did not understand, read while part of
// its inserted record was still to be sent, made it give up and drop those bytes, so the application
// read a PARAMS record cut short. It now sends them first and only then lets the connection go.
TEST_F(FcgiClientTest, GivingUpWithPartOfTheRecordPendingSendsItFirst) {
  std::string prog = kProgram;
  iovec iov{prog.data(), prog.size()};
  iovec out[1 + WireClient::kWriteExtra];
  int k = client->plan_write(&iov, 1, out);
  ASSERT_GT(k, 0);
  std::string lay = gathered(out, k);
  ASSERT_GT(lay.size(), prog.size() + 5);
  // the kernel takes BEGIN_REQUEST and 5 bytes of the inserted record
  size_t mine = client->commit_write(16 + 5);
  EXPECT_EQ(mine, 16u);
  std::string wire = lay.substr(0, 16 + 5);
  client->on_sent(prog.data(), mine);
  uint64_t before = counters().streams_unparsed.load();
  client->on_received("\x02\x06\x00\x01\x00\x00\x00\x00", 8);  // not FastCGI 1
  EXPECT_EQ(counters().streams_unparsed.load() - before, 1u);
  EXPECT_FALSE(client->stopped()) << "let go with bytes of its record still to send";
  iovec rest{prog.data() + mine, prog.size() - mine};
  k = client->plan_write(&rest, 1, out);
  ASSERT_GT(k, 0);
  std::string lay2 = gathered(out, k);
  EXPECT_EQ(client->commit_write(lay2.size()), prog.size() - mine);
  wire += lay2;
  client->on_sent(prog.data() + mine, prog.size() - mine);
  EXPECT_TRUE(client->stopped());
  // the wire: the program's bytes with one whole PARAMS record after BEGIN_REQUEST
  fcgi::Header h;
  ASSERT_TRUE(fcgi::parse_header(wire.data() + 16, &h));
  EXPECT_EQ(h.type, fcgi::kParams);
  std::string without = wire;
  without.erase(16, 8 + h.content + h.padding);
  EXPECT_EQ(without, prog);
  // nothing more is inserted or changed
  EXPECT_EQ(client->plan_write(&iov, 1, out), 0);
}

// Found by fuzzing (agent_fuzz_fastcgi_client): a request begun while the client already followed its
// 16 calls on the connection (multiplexed ids) got no call row, but its params still carried a context
// whose parent span no row of the caller has.
TEST_F(FcgiClientTest, ARequestPastTheCallsFollowedCarriesNoContext) {
  uint64_t internal = counters().internal_errors.load();
  for (uint16_t id = 1; id <= 17; ++id) {
    std::string req = begin(id, true) + params(id, nginx_params("GET", "/p/" + std::to_string(id))) + stdin_(id, "");
    std::string wire = write_all(*client, req, 1 << 20);
    if (id <= 16) EXPECT_GT(wire.size(), req.size()) << id;
    else EXPECT_EQ(wire, req);
  }
  EXPECT_EQ(counters().internal_errors.load() - internal, 1u);
  const Transaction& t = end_front();
  size_t rows = 0;
  while (call_row(t, rows)) ++rows;
  EXPECT_EQ(rows, 16u);
}

TEST_F(FcgiClientTest, CallRowLinksToTheApplicationsTransaction) {
  std::string wire = write_all(*client, kProgram, 1 << 20);
  ASSERT_GT(wire.size(), kProgram.size());
  // the program's bytes are the wire's with the inserted record taken out, right after BEGIN_REQUEST
  fcgi::Header h;
  ASSERT_TRUE(fcgi::parse_header(wire.data() + 16, &h));
  EXPECT_EQ(h.type, fcgi::kParams);
  EXPECT_EQ(h.id, 1);
  std::string rest = wire;
  rest.erase(16, 8 + h.content + h.padding);
  EXPECT_EQ(rest, kProgram);

  auto app = serve(wire);
  ASSERT_EQ(app.size(), 1u);
  FakeClock::advance(7000);
  std::string answer = stdout_(1, "Status: 404 Not Found\r\n\r\nnope") + end(1);
  client->on_received(answer.data(), answer.size());
  const Transaction& f = end_front();
  const Step* row = call_row(f);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(std::string(row->text.view()), "fastcgi://127.0.0.1:9000/index.php?user=?");
  EXPECT_EQ(row->status, 404);
  EXPECT_EQ(row->elapsed_ns, 7000u);
  EXPECT_EQ(row->bytes_read, std::string("Status: 404 Not Found\r\n\r\nnope").size());
  EXPECT_EQ(app[0]->name, "GET /index.php");
  EXPECT_EQ(app[0]->parent_span_id, row->id) << "the callee's parent is the call row";
  EXPECT_EQ(0, std::memcmp(app[0]->trace_id, f.trace_id, 16));
  EXPECT_EQ(f.totals.call_count, 1u);
}

TEST_F(FcgiClientTest, AnyKernelSplitGivesTheSameWireAndCounts) {
  std::mt19937 rng(11);
  std::string first;
  for (size_t cap : {size_t(1), size_t(3), size_t(8), size_t(17), size_t(24), size_t(25), size_t(100), size_t(4096)}) {
    client.reset(fcgi::make_client(env));
    std::string wire = write_all(*client, kProgram, cap, cap % 2 ? &rng : nullptr);
    fcgi::Header h;
    ASSERT_TRUE(fcgi::parse_header(wire.data() + 16, &h)) << cap;
    std::string rest = wire;
    rest.erase(16, 8 + h.content);
    EXPECT_EQ(rest, kProgram) << cap;
    auto app = serve(wire);
    ASSERT_EQ(app.size(), 1u) << cap;
    EXPECT_NE(app[0]->parent_span_id, 0u) << cap;
    EXPECT_EQ(0, std::memcmp(app[0]->trace_id, front->trace_id, 16));
    client->on_end({});
  }
}

TEST_F(FcgiClientTest, KeepConnRequestsEachGetTheirOwnSpan) {
  std::vector<uint64_t> parents;
  for (int i = 0; i < 3; ++i) {
    std::string prog = begin(1, true) + params(1, nginx_params("GET", "/r" + std::to_string(i))) + stdin_(1, "x");
    std::string wire = write_all(*client, prog, 1 << 20);
    auto app = serve(wire);
    ASSERT_EQ(app.size(), 1u);
    parents.push_back(app[0]->parent_span_id);
    std::string answer = stdout_(1, "\r\n") + end(1);
    client->on_received(answer.data(), answer.size());
  }
  const Transaction& f = end_front();
  for (int i = 0; i < 3; ++i) {
    const Step* row = call_row(f, size_t(i));
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->id, parents[size_t(i)]);
    EXPECT_EQ(row->bytes_written, 1u);
    EXPECT_EQ(row->status, 200);
  }
  EXPECT_NE(parents[0], parents[1]);
}

TEST_F(FcgiClientTest, ProgramsOwnTraceparentComesAfterTheInsertedOne) {
  // nginx passes its client's traceparent header on as HTTP_TRACEPARENT: the front's call row is the
  // nearer caller, and its record comes first
  std::string prog = begin(1) +
                     params(1, nginx_params("GET", "/x", "00-11111111111111111111111111111111-2222222222222222-01")) +
                     stdin_(1, "");
  std::string wire = write_all(*client, prog, 1 << 20);
  auto app = serve(wire);
  ASSERT_EQ(app.size(), 1u);
  std::string answer = stdout_(1, "\r\n") + end(1);
  client->on_received(answer.data(), answer.size());
  const Transaction& f = end_front();
  EXPECT_EQ(app[0]->parent_span_id, call_row(f)->id);
}

TEST_F(FcgiClientTest, NoPropagationNoChangeButStillARow) {
  fcgi::set_propagate_for_test(0);
  iovec iov{const_cast<char*>(kProgram.data()), kProgram.size()};
  iovec out[1 + WireClient::kWriteExtra];
  EXPECT_EQ(client->plan_write(&iov, 1, out), 0);
  client->on_sent(kProgram.data(), kProgram.size());
  std::string answer = stdout_(1, "Status: 502 Bad Gateway\r\n\r\n") + end(1);
  client->on_received(answer.data(), answer.size());
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->status, 502);
  EXPECT_EQ(call_row(f)->error, "HTTP 502");
}

TEST_F(FcgiClientTest, GarbageStopsTheClientOnceAndNothingIsInsertedAfter) {
  client->on_sent(kProgram.data(), kProgram.size());
  std::string junk = "\x09\x09garbage!";
  client->on_received(junk.data(), junk.size());
  EXPECT_TRUE(client->stopped());
  EXPECT_EQ(counters().streams_unparsed.load(), 1u);
  std::string next = begin(2) + params(2, nginx_params("GET", "/y"));
  iovec iov{next.data(), next.size()};
  iovec out[1 + WireClient::kWriteExtra];
  EXPECT_EQ(client->plan_write(&iov, 1, out), 0);
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->error, "FastCGI stream not understood");
}

TEST_F(FcgiClientTest, ConnectionEndClosesTheRowWithAnError) {
  write_all(*client, kProgram, 1 << 20);
  client->on_end("connection closed by the server before the reply ended");
  const Transaction& f = end_front();
  ASSERT_NE(call_row(f), nullptr);
  EXPECT_EQ(call_row(f)->error, "connection closed by the server before the reply ended");
  EXPECT_FALSE(call_row(f)->open);
}

// nginx sends a request body it buffered in a file with sendfile(): the STDIN record's header and
// padding by write(), its content unseen. The row counts it, and the stream is still followed.
TEST_F(FcgiClientTest, BodySentWithSendfileIsCountedAndTheRowEnds) {
  const std::string body(40000, 'b');
  const std::string rec = record(fcgi::kStdin, 1, body, 0);  // header(8) + content
  std::string head = begin(1) + params(1, nginx_params("POST", "/upload")) + rec.substr(0, fcgi::kHeaderLen);
  write_all(*client, head, 1 << 20);
  EXPECT_FALSE(client->on_sent_opaque(40001));  // more than the record holds: not taken, nothing counted
  EXPECT_TRUE(client->on_sent_opaque(32768));
  EXPECT_TRUE(client->on_sent_opaque(7232));
  EXPECT_FALSE(client->on_sent_opaque(1));  // past the record: STDIN's end record comes by write()
  std::string tail = stdin_(1, "");
  write_all(*client, tail, 1 << 20);
  std::string answer = stdout_(1, "Status: 201 Created\r\n\r\n") + end(1);
  client->on_received(answer.data(), answer.size());
  EXPECT_FALSE(client->stopped());
  const Transaction& f = end_front();
  const Step* row = call_row(f);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->bytes_written, 40000u);
  EXPECT_EQ(row->status, 201);
  EXPECT_TRUE(row->error.empty()) << row->error;
  EXPECT_EQ(counters().streams_unparsed.load(), 0u);
}

// Bytes sent unseen anywhere else (inside PARAMS, between records) cannot be followed.
TEST_F(FcgiClientTest, UnseenBytesOutsideABodyAreNotTaken) {
  std::string head = begin(1) + params(1, nginx_params("GET", "/x")).substr(0, 12);
  write_all(*client, head, 1 << 20);
  EXPECT_FALSE(client->on_sent_opaque(4));
  std::string rest = params(1, nginx_params("GET", "/x")).substr(12) + stdin_(1, "");
  write_all(*client, rest, 1 << 20);
  EXPECT_FALSE(client->on_sent_opaque(8));  // between records
  EXPECT_FALSE(client->stopped());  // refusing is the dispatch's cue to let go; the client itself is sound
}
