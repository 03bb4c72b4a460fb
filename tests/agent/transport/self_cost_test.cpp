// The agent's own cost (transport/self_cost.h): the calibration gives positive, ordered, bounded unit
// costs from the agent's own code; the host estimate follows the transaction's counts; the wire carries
// the estimate and the units. No timing assertion beyond orders of magnitude (a shared machine).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/counters.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "transport/encode.h"
#include "transport/self_cost.h"
#include "txray/v1/txray.pb.h"

using namespace txray;

TEST(SelfCost, CalibrationIsPositiveOrderedAndBounded) {
  selfcost::reset_for_test();  // another test may have set units (and marked them calibrated) before this one
  selfcost::calibrate();
  const selfcost::Units& u = selfcost::units();
  ASSERT_TRUE(u.valid());
  EXPECT_GT(u.row_ns, 0);
  EXPECT_GT(u.io_ns, 0);
  EXPECT_GT(u.syscall_ns, 0);
  EXPECT_GT(u.encode_tx_ns, 0);
  EXPECT_GT(u.cpu_clock_ns, 0);
  // The units are timings of the agent's own code on this machine: printed, never compared (a loaded
  // machine stretches any of them); bench/agent_cost checks the estimate against what is measured.
  printf("units: tx %.0f ns, row %.0f, io %.0f, syscall %.0f, cpu clock %.0f, encode %.0f; calibration %llu ns\n",
         double(u.tx_ns), double(u.row_ns), double(u.io_ns), double(u.syscall_ns), double(u.cpu_clock_ns),
         double(u.encode_tx_ns), static_cast<unsigned long long>(u.calibration_ns));
  // Once per process.
  uint64_t took = u.calibration_ns;
  selfcost::calibrate();
  EXPECT_EQ(selfcost::units().calibration_ns, took);
}

TEST(SelfCost, HostEstimateFollowsTheCounts) {
  selfcost::Units u;
  u.tx_ns = 1000;
  u.row_ns = 300;
  u.folded_ns = 100;
  u.io_ns = 10;
  u.syscall_ns = 50;
  u.encode_tx_ns = 200;
  u.encode_row_ns = 20;
  selfcost::set_units_for_test(u);
  Transaction t;
  t.rows = 2;  // START, END
  t.steps.resize(2);
  t.io_calls = 1;  // the response write
  EXPECT_EQ(selfcost::host_estimate(t), 1000u + 2 * 10);
  t.rows = 5;
  t.steps.resize(5);
  t.steps[1].kind = StepKind::SOCKET;
  t.io_calls = 3;
  t.summary.resize(1);
  t.summary[0].count = 4;
  EXPECT_EQ(selfcost::host_estimate(t), 1000u + 3 * 300 + 4 * 100 + 4 * 10 + 2 * 50);
  EXPECT_DOUBLE_EQ(selfcost::agent_thread_weight(t), 200 + 3 * 20);
}

TEST(SelfCost, EncodedOnTheWire) {
  selfcost::Units u;
  u.tx_ns = 1234.5;
  u.row_ns = 300;
  u.io_ns = 12.25;
  u.cpu_clock_ns = 500;
  u.calibration_ns = 4'000'000;
  selfcost::set_units_for_test(u);
  Transaction* t = tx::begin("GET /x", "http");
  t->agent_cost_ns = 2100;
  t->agent_thread_ns = 400;
  std::string buf;
  Identity id;
  Counters c;
  ASSERT_TRUE(encode_batch(id, c, 1, {t}, &buf));
  delete t;
  v1::Batch b;
  ASSERT_TRUE(b.ParseFromString(buf));
  ASSERT_EQ(b.transactions_size(), 1);
  EXPECT_EQ(b.transactions(0).agent_cost_ns(), 2100u);
  EXPECT_EQ(b.transactions(0).agent_thread_ns(), 400u);
  ASSERT_TRUE(b.agent().has_cost_units());
  EXPECT_EQ(b.agent().cost_units().tx_ps(), 1234500u);
  EXPECT_EQ(b.agent().cost_units().io_ps(), 12250u);
  EXPECT_EQ(b.agent().cost_units().cpu_clock_ps(), 500000u);
  EXPECT_EQ(b.agent().cost_units().calibration_ns(), 4'000'000u);
}
