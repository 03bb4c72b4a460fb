// txray_show: number formats, the message of each step kind, the profile layout, and trace ordering.
#include <gtest/gtest.h>

#include "show_format.h"
#include "profile_json.h"
#include "profile_text.h"
#include "trace_tree.h"
#include "unattributed.h"

namespace txray::show {
namespace {

TEST(Format, ThousandsAndMilliseconds) {
  EXPECT_EQ(thousands(0), "0");
  EXPECT_EQ(thousands(999), "999");
  EXPECT_EQ(thousands(1000), "1,000");
  EXPECT_EQ(thousands(51612), "51,612");
  EXPECT_EQ(thousands(-1234567), "-1,234,567");
  EXPECT_EQ(ms_rounded(2942400000), "2,942");
  EXPECT_EQ(ms_rounded(2942500000), "2,943");
  EXPECT_EQ(ms_rounded(0), "0");
  EXPECT_EQ(ms_precise(2942123456), "2,942.123");
  EXPECT_EQ(ms_precise(999), "0.001");
  EXPECT_EQ(ms_elapsed(350000), "0.350");
  EXPECT_EQ(ms_elapsed(3514000), "3.51");
  EXPECT_EQ(ms_elapsed(2938000000), "2,938");
}

Step step(const char* kind, std::string text = {}) {
  Step s;
  s.kind = kind;
  s.text = std::move(text);
  return s;
}

TEST(StepMessage, EachKind) {
  Step sock = step("SOCKET");
  sock.attributes = {{"addr", "192.168.50.2"}, {"port", "8005"}, {"localport", "13192"}};
  sock.id = 0x207e8a3;
  sock.elapsed_ns = 1500000;
  EXPECT_EQ(step_message(sock), "SOCKET[addr=192.168.50.2,port=8005,localport=13192] uid=000000000207e8a3 [1.50 ms]");

  Step close = step("SOCKET_CLOSE");
  close.bytes_read = 51612;
  close.bytes_written = 222;
  close.id = 0x207e8a3;
  EXPECT_EQ(step_message(close), "SOCKET_CLOSE R=51612,W=222,uid=000000000207e8a3");

  Step sql = step("SQL", "SELECT *\nFROM t WHERE id = ?");
  sql.rows = 1234;
  sql.elapsed_ns = 25000000;
  EXPECT_EQ(step_message(sql), "SQL SELECT * FROM t WHERE id = ? rows=1,234 [25 ms]");
  sql.attributes = {{"binds", "?"}};
  EXPECT_EQ(step_message(sql), "SQL SELECT * FROM t WHERE id = ? binds=(?) rows=1,234 [25 ms]");

  Step call = step("HTTP_CALL", "http://backend:8080/stock");
  call.attributes = {{"method", "GET"}};
  call.status = 200;
  call.elapsed_ns = 2938000000;
  call.callee_txid = 0x67993fb388ceed27;
  EXPECT_EQ(step_message(call), "HTTP_CALL GET http://backend:8080/stock status 200 [2,938 ms] callee=67993fb388ceed27");

  Step dns = step("DNS", "localhost");
  dns.attributes = {{"addr", "127.0.0.1"}};
  dns.elapsed_ns = 120000;
  EXPECT_EQ(step_message(dns), "DNS localhost \xe2\x86\x92 127.0.0.1 [0.120 ms]");

  Step failed = step("SOCKET");
  failed.error = "ECONNREFUSED";
  EXPECT_NE(step_message(failed).find("!! ERROR: ECONNREFUSED"), std::string::npos);
  EXPECT_EQ(step_message(step("MESSAGE", "checkpoint")), "checkpoint");
  EXPECT_EQ(step_message(step("END")), "END");
}

Transaction sample() {
  Transaction t;
  t.txid = 0xabc;
  t.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  t.app = "shop";
  t.name = "GET /cart";
  t.start_unix_ns = 1700000000000000000;
  t.elapsed_ns = 2942000000;
  t.end_unix_ns = t.start_unix_ns + t.elapsed_ns;
  t.cpu_ns = 1356000000;
  t.status = 200;
  Step s0 = step("START"), s1 = step("HTTP_CALL", "http://b/x"), s2 = step("SOCKET"), s3 = step("END");
  s1.no = 1;
  s2.no = 2;
  s2.parent = 1;
  s3.no = 3;
  s1.gap_ns = 12000000;
  s2.gap_ns = 1466000000;
  s2.cpu_ns = 0;
  s3.gap_ns = 1464000000;
  s3.cpu_ns = 1356000000;
  t.steps = {s0, s1, s2, s3};
  return t;
}

TEST(ProfileText, LayoutOfHeaderRowsAndTotal) {
  std::string p = profile_text(sample(), "  ");
  EXPECT_NE(p.find("  TXID           : 0000000000000abc\n"), std::string::npos) << p;
  EXPECT_NE(p.find("RESPONSE TIME  : 2,942.000 ms"), std::string::npos) << p;
  EXPECT_NE(p.find("[ NO ][ START_TIME ][  GAP][CPU_T]"), std::string::npos) << p;
  EXPECT_NE(p.find("][1,466][    0]   SOCKET["), std::string::npos) << p;  // nested: indented by 2
  EXPECT_NE(p.find("][1,464][1,356] END\n"), std::string::npos) << p;
  EXPECT_NE(p.find("  TOTAL[2,942][1,356]\n"), std::string::npos) << p;
}

TEST(ProfileText, AStackIsPrintedUnderItsRowAtItsMessage) {
  Transaction t = sample();
  t.steps[2].error = "ECONNREFUSED";
  t.steps[2].stack = {{"caller()", "app", 0x10}, {"", "libx.so", 0x2a}};
  std::string p = profile_text(t, "");
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = p.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(p.substr(at, nl - at));
  size_t row = 0;
  while (row < lines.size() && lines[row].find("SOCKET[") == std::string::npos) ++row;
  ASSERT_LT(row + 2, lines.size()) << p;
  const size_t message = lines[row].find("SOCKET[");
  EXPECT_EQ(lines[row + 1], std::string(message + 2, ' ') + "at caller() (app+0x10)") << p;
  EXPECT_EQ(lines[row + 2], std::string(message + 2, ' ') + "at libx.so+0x2a") << p;
  EXPECT_NE(lines[row + 3].find("] END"), std::string::npos) << p;
  auto j = transaction_json(t);
  ASSERT_EQ(j["steps"][2]["stack"].size(), 2u);
  EXPECT_EQ(j["steps"][2]["stack"][0]["function"], "caller()");
  EXPECT_EQ(j["steps"][2]["stack"][1]["module"], "libx.so");
  EXPECT_EQ(j["steps"][2]["stack"][1]["offset"], 0x2a);
  EXPECT_FALSE(j["steps"][1].contains("stack"));
}

// The agent's CPU samples lost and stacks missed (DropCounters 9, 10): a header line and two JSON fields
// when either is non-zero, nothing otherwise.
TEST(ProfileText, AgentLossesShownWhenAny) {
  Transaction t = sample();
  EXPECT_EQ(profile_text(t, "").find("AGENT LOSSES"), std::string::npos);
  EXPECT_FALSE(transaction_json(t).contains("agent_cpu_samples_lost"));
  t.agent_cpu_samples_lost = 1234;
  t.agent_stacks_missed = 2;
  std::string p = profile_text(t, "");
  EXPECT_NE(p.find("AGENT LOSSES   : cpu samples lost 1,234, stacks missed 2"), std::string::npos) << p;
  auto j = transaction_json(t);
  EXPECT_EQ(j["agent_cpu_samples_lost"], 1234);
  EXPECT_EQ(j["agent_stacks_missed"], 2);
}

TEST(ProfileText, RawValuesSaidInTheHeader) {
  Transaction t = sample();
  EXPECT_EQ(profile_text(t, "").find("VALUES"), std::string::npos);
  t.attributes.push_back({"values", "raw"});
  std::string p = profile_text(t, "");
  EXPECT_NE(p.find("VALUES         : raw"), std::string::npos) << p;
  EXPECT_LT(p.find("VALUES"), p.find("CLIENT")) << p;  // near the top, where a reader starts
}

TEST(ProfileJson, FieldsAndHexIds) {
  Transaction t = sample();
  t.steps[1].id = 0x1234;
  t.steps[1].callee_txid = 0x99;
  auto j = transaction_json(t);
  EXPECT_EQ(j["txid"], "0000000000000abc");
  EXPECT_EQ(j["guid"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(j["elapsed_ns"], 2942000000);
  EXPECT_EQ(j["steps"].size(), 4u);
  EXPECT_EQ(j["steps"][1]["url"], "http://b/x");
  EXPECT_EQ(j["steps"][1]["span_id"], "0000000000001234");
  EXPECT_EQ(j["steps"][1]["callee_txid"], "0000000000000099");
  EXPECT_EQ(j["steps"][2]["parent"], 1);
  EXPECT_FALSE(j["steps"][2].contains("rows"));
}

Transaction container() {
  Transaction c;
  c.id = 7;
  c.txid = 0xc0;
  c.app = "front";
  c.name = "unattributed steps";
  c.kind = "unattributed";
  c.start_unix_ns = 1764410400000000000;  // 2025-11-29T10:00:00Z
  c.elapsed_ns = 1000000000;
  c.agent.instance_id = 0xa9;
  c.agent.pid = 4242;
  c.agent.host = "h1";
  c.agent.program = "node";
  c.steps = {step("START"), step("HTTP_CALL", "http://back:8080/b/1"), step("SOCKET"), step("END")};
  for (int i = 0; i < 4; ++i) c.steps[i].no = i;
  auto& call = c.steps[1];
  call.start_offset_ns = 250000000;
  call.elapsed_ns = 1500000;
  call.status = 200;
  call.id = 0x5a;
  call.callee_txid = 0xbeef;
  call.attributes = {{"method", "GET"}};
  c.steps[2].start_offset_ns = 300000000;
  c.steps[2].error = "ECONNREFUSED";
  c.summary.push_back({"HTTP_CALL", 0, "http://back:8080/b/x", 40, 80000000, std::nullopt, 0, 0, 0});
  return c;
}

TEST(Unattributed, HeaderCountsPerKindMostFirst) {
  Agent a;
  a.pid = 4242;
  a.host = "h1";
  a.program = "node";
  EXPECT_EQ(unattributed_header(a, "front", {{1, "front", "SOCKET", 2}, {1, "front", "HTTP_CALL", 10}}),
            "UNATTRIBUTED  app=front  12 steps: HTTP_CALL 10, SOCKET 2  (pid 4242, node on h1)\n");
}

TEST(Unattributed, OneLinePerStepAtItsOwnTimeWithoutStartAndEnd) {
  const Transaction c = container();
  const std::string text = unattributed_lines(c);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(text.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 3u) << text;
  EXPECT_EQ(lines[0], "  " + date_time(c.start_unix_ns + 250000000) +
                          "  HTTP_CALL GET http://back:8080/b/1 status 200 [1.50 ms] callee=000000000000beef");
  EXPECT_NE(lines[1].find("SOCKET[addr=?"), std::string::npos);
  EXPECT_NE(lines[1].find("!! ERROR: ECONNREFUSED"), std::string::npos);
  EXPECT_EQ(lines[2], "  " + date_time(c.start_unix_ns) +
                          "  HTTP_CALL x40 [80 ms] (folded past the step limit)  http://back:8080/b/x");
}

TEST(Unattributed, JsonObjectPerStep) {
  const auto js = unattributed_json(container());
  ASSERT_EQ(js.size(), 3u);
  const auto& j = js[0];
  EXPECT_EQ(j["app"], "front");
  EXPECT_EQ(j["agent"], "00000000000000a9");
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["container_tx_id"], "00000000000000c0");
  EXPECT_EQ(j["kind"], "HTTP_CALL");
  EXPECT_EQ(j["text"], "http://back:8080/b/1");
  EXPECT_EQ(j["start_unix_ns"], 1764410400250000000);
  EXPECT_DOUBLE_EQ(j["elapsed_ms"].get<double>(), 1.5);
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["error"], "");
  EXPECT_EQ(j["callee_tx_id"], "000000000000beef");
  EXPECT_EQ(j["span_id"], "000000000000005a");
  EXPECT_EQ(j["count"], 1);
  EXPECT_EQ(j["folded"], false);
  EXPECT_FALSE(j.contains("callee_txid"));
  EXPECT_TRUE(js[1]["status"].is_null());
  EXPECT_TRUE(js[1]["callee_tx_id"].is_null());
  EXPECT_EQ(js[1]["error"], "ECONNREFUSED");
  EXPECT_EQ(js[2]["folded"], true);
  EXPECT_EQ(js[2]["count"], 40);
  EXPECT_EQ(js[2]["kind"], "HTTP_CALL");
}

TEST(TraceOrder, CallersBeforeCalleesByDepth) {
  Transaction front = sample(), back = sample(), db = sample(), stray = sample();
  front.id = 1;
  front.txid = 0x10;
  front.steps[1].kind = "HTTP_CALL";
  front.steps[1].id = 0xaaa;  // the span id this call sent
  back.id = 2;
  back.txid = 0x20;
  back.parent_span_id = 0xaaa;
  back.start_unix_ns += 1;
  db.id = 3;
  db.txid = 0x30;
  db.parent_span_id = 0x20;  // parent given as the caller's own span id
  db.start_unix_ns += 2;
  stray.id = 4;
  stray.txid = 0x40;
  stray.parent_span_id = 0xdead;  // caller not in this trace: a root
  stray.start_unix_ns -= 1;
  std::vector<Transaction> txs{db, back, stray, front};
  auto order = trace_order(txs);
  ASSERT_EQ(order.size(), 4u);
  std::vector<std::pair<uint64_t, int>> got;
  for (auto& n : order) got.emplace_back(txs[n.index].txid, n.depth);
  std::vector<std::pair<uint64_t, int>> want{{0x40, 0}, {0x10, 0}, {0x20, 1}, {0x30, 2}};
  EXPECT_EQ(got, want);
}

TEST(TraceOrder, LongChainsAndCyclesTerminate) {
  std::vector<Transaction> txs(100000);
  for (size_t i = 0; i < txs.size(); ++i) {
    txs[i].id = static_cast<int64_t>(i + 1);
    txs[i].txid = i + 1;
    txs[i].parent_span_id = i;  // each the callee of the one before: one chain, 100,000 deep
  }
  auto order = trace_order(txs);
  ASSERT_EQ(order.size(), txs.size());
  EXPECT_EQ(order.back().depth, 99999);
  txs[0].parent_span_id = txs.size();  // close the chain into a cycle: nobody is a root
  EXPECT_EQ(trace_order(txs).size(), txs.size());
}

}  // namespace
}  // namespace txray::show
