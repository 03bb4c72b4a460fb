// The transport against a real ZeroMQ PULL socket: batches decode as txray.v1.Batch, drops are counted
// and reach the receiver once it is there. No collector needed.
#include <unistd.h>
#include <zmq.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "config.h"
#include "counters.h"
#include "recorder.h"
#include "transaction.h"
#include "transport/transport.h"
#include "txray/v1/txray.pb.h"

using namespace txray;

namespace {

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = "ipc:///tmp/txray-transport-test-" + std::to_string(getpid()) + ".sock";
    ctx_ = zmq_ctx_new();
  }
  void TearDown() override {
    if (pull_) zmq_close(pull_);
    zmq_ctx_term(ctx_);
    unlink(endpoint_.substr(6).c_str());
  }
  void start_transport(uint32_t queue = 64) {
    Config c;
    c.collector = endpoint_;
    c.app = "transport-test";
    c.queue_capacity = queue;
    set_config(c);
    transport::init(read_identity());
  }
  void bind_pull() {
    pull_ = zmq_socket(ctx_, ZMQ_PULL);
    ASSERT_EQ(zmq_bind(pull_, endpoint_.c_str()), 0) << zmq_strerror(zmq_errno());
  }
  // Receives one batch, waiting at most timeout_ms.
  bool receive(v1::Batch* b, int timeout_ms = 5000) {
    zmq_pollitem_t item{pull_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, timeout_ms) <= 0) return false;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, pull_, 0) < 0) return false;
    bool ok = b->ParseFromArray(zmq_msg_data(&msg), int(zmq_msg_size(&msg)));
    zmq_msg_close(&msg);
    return ok;
  }
  // Receives batches until one carries transactions.
  bool receive_transactions(v1::Batch* b) {
    for (int i = 0; i < 20; ++i)
      if (receive(b) && b->transactions_size() > 0) return true;
    return false;
  }
  void finish_one(const char* name) {
    Transaction* t = tx::begin(name, "api");
    tx::make_current(t);
    StepRef s = rec::open(t, StepKind::SOCKET);
    rec::set_text(s, "127.0.0.1:80");
    rec::add_attr(s, "port", "80");
    rec::close(s);
    tx::end(t, 200, "");
  }
  std::string endpoint_;
  void* ctx_ = nullptr;
  void* pull_ = nullptr;
};

}  // namespace

TEST_F(TransportTest, BatchDecodesWithAgentInfoAndSteps) {
  bind_pull();
  start_transport();
  finish_one("GET /one");
  v1::Batch b;
  ASSERT_TRUE(receive_transactions(&b));
  EXPECT_EQ(b.agent().pid(), uint32_t(getpid()));
  EXPECT_EQ(b.agent().app(), "transport-test");
  EXPECT_NE(b.agent().instance_id(), 0u);
  EXPECT_GE(b.batch_seq(), 1u);
  const auto& t = b.transactions(0);
  EXPECT_EQ(t.name(), "GET /one");
  EXPECT_EQ(t.status(), 200);
  EXPECT_EQ(t.trace_id().size(), 16u);
  ASSERT_EQ(t.steps_size(), 3);
  EXPECT_EQ(t.steps(0).kind(), v1::START);
  EXPECT_EQ(t.steps(1).kind(), v1::SOCKET);
  EXPECT_EQ(t.steps(1).text(), "127.0.0.1:80");
  EXPECT_EQ(t.steps(2).kind(), v1::END);
  uint64_t gaps = 0;
  for (const auto& s : t.steps()) gaps += s.gap_ns();
  EXPECT_EQ(gaps, t.elapsed_ns());
}

TEST_F(TransportTest, ManyTransactionsGoInFewBatches) {
  bind_pull();
  start_transport(4096);
  for (int i = 0; i < 1000; ++i) finish_one("GET /many");
  int got = 0, batches = 0;
  v1::Batch b;
  while (got < 1000 && receive(&b)) {
    got += b.transactions_size();
    ++batches;
  }
  EXPECT_EQ(got, 1000);
  EXPECT_LT(batches, 1000 / 4);
}

TEST_F(TransportTest, FullQueueDropsAndCountsAndTheCountArrives) {
  bind_pull();
  start_transport(2);
  const int n = 5000;
  for (int i = 0; i < n; ++i) finish_one("GET /flood");
  uint64_t dropped = counters().queue_full.load();
  EXPECT_GT(dropped, 0u);
  int got = 0;
  uint64_t reported = 0;
  v1::Batch b;
  while (got + dropped < uint64_t(n) && receive(&b, 3000)) got += b.transactions_size();
  EXPECT_EQ(got + dropped, uint64_t(n));  // every transaction was either delivered or counted
  finish_one("GET /after");
  while (receive(&b, 3000)) {
    reported = b.drops().queue_full();
    if (b.transactions_size() && b.transactions(b.transactions_size() - 1).name() == "GET /after") break;
  }
  EXPECT_EQ(reported, dropped);
}

TEST_F(TransportTest, CollectorAwayCountsSendFailedAndDeliversItLater) {
  start_transport();  // nobody listening yet
  finish_one("GET /lost");
  for (int i = 0; i < 200 && counters().send_failed.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(counters().send_failed.load(), 1u);
  bind_pull();  // the collector is back: the PUSH socket reconnects by itself
  v1::Batch b;
  bool delivered = false;
  for (int i = 0; i < 100 && !delivered; ++i) {
    finish_one("GET /back");
    if (receive(&b, 200)) delivered = b.drops().send_failed() >= 1;
  }
  EXPECT_TRUE(delivered);
}

TEST_F(TransportTest, FlushSendsWhatIsQueuedWithinTheBound) {
  bind_pull();
  start_transport();
  finish_one("GET /last");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(transport::flush(2000));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000));
  v1::Batch b;
  ASSERT_TRUE(receive_transactions(&b));
  EXPECT_EQ(b.transactions(0).name(), "GET /last");
}
