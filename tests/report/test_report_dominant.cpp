// The dominant-cost rule (breakdown.h) on hand-made profiles, starting with the X-View case study.
#include <gtest/gtest.h>

#include "breakdown.h"

using namespace txray::report;

namespace {

constexpr int64_t ms = 1'000'000;

StepRow row(int no, const std::string& kind, int64_t start, int64_t gap, int64_t cpu, int64_t elapsed = 0) {
  StepRow r;
  r.no = no;
  r.kind = kind;
  r.start_ns = start * ms;
  r.gap_ns = gap * ms;
  r.cpu_ns = cpu * ms;
  r.elapsed_ns = elapsed * ms;
  return r;
}

// The JENNIFER X-View profile: 1,466 ms with a socket open and no CPU, then 1,463 ms with 1,356 ms CPU.
std::vector<StepRow> xview(bool with_socket) {
  std::vector<StepRow> rows{row(0, "START", 0, 0, 0)};
  if (with_socket) {
    auto s = row(1, "SOCKET", 12, 12, 0);
    s.ref_id = 34069859;
    s.attributes = R"({"addr":"192.168.50.2","port":"8005","localport":"13192"})";
    auto c = row(2, "SOCKET_CLOSE", 1478, 1466, 0);
    c.ref_id = 34069859;
    rows.push_back(s);
    rows.push_back(c);
  } else {
    rows.push_back(row(1, "MESSAGE", 12, 12, 0));
    rows.push_back(row(2, "MESSAGE", 1478, 1466, 0));
  }
  rows.push_back(row(3, "MESSAGE", 2941, 1463, 1356));
  rows.push_back(row(4, "END", 2942, 1, 0));
  return rows;
}

TEST(Dominant, XViewSocketWaitBeatsCpu) {
  Dominant d = dominant_cost({2942 * ms, 1356 * ms, 0, 0, 0}, xview(true), {});
  EXPECT_EQ(d.cost, Cost::SocketWait);
  EXPECT_EQ(d.ns, 1466 * ms);
  EXPECT_EQ(d.socket_wait_ns, 1466 * ms);
  EXPECT_EQ(d.idle_ns, (2942 - 1356 - 1466) * ms);
  EXPECT_EQ(d.step_no, 1);
  EXPECT_EQ(d.step, "#1 SOCKET 192.168.50.2:8005");
}

TEST(Dominant, WithoutTheSocketTheWaitIsIdleAndCpuWins) {
  Dominant d = dominant_cost({2942 * ms, 1356 * ms, 0, 0, 0}, xview(false), {});
  EXPECT_EQ(d.cost, Cost::Idle);  // 1,586 ms idle > 1,356 ms CPU
  EXPECT_EQ(d.ns, 1586 * ms);
  EXPECT_EQ(d.step_no, 2);        // the 1,466 ms gap before row 2
  EXPECT_NE(d.step.find("idle before #2"), std::string::npos) << d.step;

  auto rows = xview(false);
  rows[3].cpu_ns = 1463 * ms;   // CPU-bound decompression
  rows[2].cpu_ns = 1000 * ms;
  Dominant c = dominant_cost({2942 * ms, 2463 * ms, 0, 0, 0}, rows, {});
  EXPECT_EQ(c.cost, Cost::Cpu);
  EXPECT_EQ(c.ns, 2463 * ms);
  EXPECT_EQ(c.step_no, 3);
  EXPECT_NE(c.step.find("CPU before #3"), std::string::npos) << c.step;
}

// The X-View TX-CALL: 2,930 ms in the call, of which 1,356 ms are the caller's own CPU (decompressing).
std::vector<StepRow> xview_call(int64_t decompress_cpu) {
  std::vector<StepRow> rows{row(0, "START", 0, 0, 0)};
  auto call = row(1, "HTTP_CALL", 12, 12, 0, 2930);
  call.text = "POST http://192.168.50.2:8005/ICalculator/GetText";
  rows.push_back(call);
  auto s = row(2, "SOCKET", 12, 0, 0);
  s.parent = 1;
  s.ref_id = 7;
  rows.push_back(s);
  auto c = row(3, "SOCKET_CLOSE", 1478, 1466, 0);
  c.parent = 1;
  c.ref_id = 7;
  rows.push_back(c);
  rows.push_back(row(4, "MESSAGE", 2941, 1463, decompress_cpu));
  rows.push_back(row(5, "END", 2942, 1, 0));
  return rows;
}

TEST(Dominant, OwnCpuInsideACallIsNotCallTime) {
  Dominant d = dominant_cost({2942 * ms, 1356 * ms, 0, 0, 2930 * ms}, xview_call(1356), {});
  EXPECT_EQ(d.call_cpu_ns, 1356 * ms);
  EXPECT_EQ(d.cost, Cost::Call);  // the remote side and the transfer (1,574 ms) still lead
  EXPECT_EQ(d.ns, (2930 - 1356) * ms);
  EXPECT_EQ(d.step_no, 1);

  // Decompression twice as heavy: CPU in own code leads, and the text names the call it hides in.
  auto rows = xview_call(1356);
  rows[4].cpu_ns = 1460 * ms;
  rows[1].elapsed_ns = 2930 * ms;
  Dominant c = dominant_cost({2942 * ms, 1460 * ms, 0, 0, 2930 * ms}, rows, {});
  EXPECT_EQ(c.call_cpu_ns, 1460 * ms);
  EXPECT_EQ(c.cost, Cost::Call);  // 1,470 ms of call vs 1,460 ms of CPU: still the call, narrowly
  rows[3].start_ns = 500 * ms;    // the response arrives sooner; the decompression takes longer
  rows[3].gap_ns = 488 * ms;
  rows[4].gap_ns = 2441 * ms;
  rows[4].cpu_ns = 2400 * ms;
  Dominant e = dominant_cost({2942 * ms, 2400 * ms, 0, 0, 2930 * ms}, rows, {});
  EXPECT_EQ(e.cost, Cost::Cpu);
  EXPECT_EQ(e.ns, 2400 * ms);
  EXPECT_EQ(e.step_no, 1);  // the call holding the CPU
  EXPECT_EQ(e.step.rfind("2,400.0 ms of own CPU inside #1 HTTP_CALL", 0), 0u) << e.step;
  EXPECT_NE(e.step.find("most in one row: 2,400.0 ms before #4"), std::string::npos) << e.step;
}

TEST(Dominant, SqlNPlusOneNamesTheStatementGroup) {
  std::vector<StepRow> rows{row(0, "START", 0, 0, 0)};
  for (int i = 0; i < 10; ++i) {
    auto s = row(1 + i, "SQL", 1 + i * 8, i ? 8 : 1, 1, 7);
    s.has_fingerprint = true;
    s.fingerprint = 42;
    s.text = "SELECT * FROM items WHERE id = ?";
    if (i == 4) s.elapsed_ns = 9 * ms;
    rows.push_back(s);
  }
  auto one = row(11, "SQL", 81, 8, 1, 30);  // the single longest statement, of another fingerprint
  one.has_fingerprint = true;
  one.fingerprint = 7;
  one.text = "SELECT count(*) FROM orders";
  rows.push_back(one);
  rows.push_back(row(12, "END", 120, 39, 5));
  // sql = 9 x 7 + 9 + 30 = 102 ms of 120
  Dominant d = dominant_cost({120 * ms, 15 * ms, 102 * ms, 0, 0}, rows, {});
  EXPECT_EQ(d.cost, Cost::Sql);
  EXPECT_EQ(d.ns, 102 * ms);
  EXPECT_EQ(d.step_no, 5);  // the longest execution of the busiest fingerprint (72 ms in all)
  EXPECT_NE(d.step.find("x10"), std::string::npos) << d.step;
  EXPECT_NE(d.step.find("SELECT * FROM items"), std::string::npos) << d.step;

  // Folded executions count towards their group: 40 more of fingerprint 7 make it the busiest.
  FoldedRow f{"SQL", true, 7, "SELECT count(*) FROM orders", 40, 400 * ms};
  Dominant g = dominant_cost({600 * ms, 15 * ms, 502 * ms, 0, 0}, rows, {f});
  EXPECT_EQ(g.step_no, 11);
  EXPECT_NE(g.step.find("x41"), std::string::npos) << g.step;
}

TEST(Dominant, FetchAndCallsAndClamping) {
  std::vector<StepRow> rows{row(0, "START", 0, 0, 0)};
  auto q = row(1, "SQL", 1, 1, 0, 10);
  q.fetch_ns = 80 * ms;
  q.text = "SELECT * FROM big";
  rows.push_back(q);
  rows.push_back(row(2, "END", 100, 99, 5));
  Dominant d = dominant_cost({100 * ms, 5 * ms, 10 * ms, 80 * ms, 0}, rows, {});
  EXPECT_EQ(d.cost, Cost::Fetch);
  EXPECT_EQ(d.ns, 80 * ms);
  EXPECT_EQ(d.step_no, 1);

  // Inconsistent totals never produce more than the response time.
  TimeShares t;
  add_shares({100 * ms, 500 * ms, 70 * ms, 50 * ms, 90 * ms}, 0, t);
  EXPECT_EQ(t.sql_ns, 70 * ms);
  EXPECT_EQ(t.fetch_ns, 30 * ms);
  EXPECT_EQ(t.call_ns, 0);
  EXPECT_EQ(t.cpu_ns, 0);
  EXPECT_EQ(t.wait_ns, 0);
  EXPECT_EQ(t.sql_ns + t.fetch_ns + t.call_ns + t.cpu_ns + t.wait_ns, t.total_ns);
}

TEST(Dominant, DnsAndDbConnectCountAsSocketWaitButNotInsideACall) {
  std::vector<StepRow> rows{row(0, "START", 0, 0, 0)};
  auto call = row(1, "HTTP_CALL", 1, 1, 0, 20);
  call.text = "GET http://api/x";
  rows.push_back(call);
  auto dns_in_call = row(2, "DNS", 1, 0, 0, 15);  // inside the call: already call time
  dns_in_call.parent = 1;
  rows.push_back(dns_in_call);
  auto dns = row(3, "DNS", 30, 29, 0, 60);
  dns.text = "db.internal";
  rows.push_back(dns);
  rows.push_back(row(4, "END", 100, 70, 2));
  Dominant d = dominant_cost({100 * ms, 2 * ms, 0, 0, 20 * ms}, rows, {});
  EXPECT_EQ(d.cost, Cost::SocketWait);
  EXPECT_EQ(d.socket_wait_ns, 60 * ms);
  EXPECT_EQ(d.idle_ns, 18 * ms);
  EXPECT_EQ(d.step_no, 3);
}

TEST(Dominant, ZeroLengthTransactionIsIdle) {
  Dominant d = dominant_cost({0, 0, 0, 0, 0}, {}, {});
  EXPECT_EQ(d.cost, Cost::Idle);
  EXPECT_EQ(d.ns, 0);
  EXPECT_EQ(d.step_no, -1);
}

}  // namespace
