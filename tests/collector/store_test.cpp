// txray_store: writer -> reader round trip of every field, texts dedup, drop counters, call linking in
// both arrival orders, and opening errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <tuple>

#include "ids.h"
#include "reader.h"
#include "store.h"
#include "synthetic.h"
#include "writer.h"

namespace txray {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("txray-store-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "txray.db").string();
    db_ = open_store(path_, OpenMode::kCreate);
    writer_ = std::make_unique<Writer>(db_);
  }
  void TearDown() override {
    writer_.reset();
    db_ = Db();
    fs::remove_all(dir_);
  }
  WriteCounts write(const v1::Batch& b, int64_t now = 1000) {
    writer_->begin();
    WriteCounts c = writer_->write(b, now);
    writer_->commit();
    return c;
  }
  int64_t count(const char* sql) {
    Stmt s(db_, sql);
    s.step();
    return s.i64(0);
  }

  fs::path dir_;
  std::string path_;
  Db db_;
  std::unique_ptr<Writer> writer_;
};

void add_attr(google::protobuf::RepeatedPtrField<v1::Attribute>* a, const char* k, const char* v) {
  auto* x = a->Add();
  x->set_key(k);
  x->set_value(v);
}

// A batch in which every field of the wire format has a distinctive value.
v1::Batch full_batch() {
  v1::Batch b;
  auto* a = b.mutable_agent();
  a->set_instance_id(0xfedcba9876543210ull);  // high bit set: stored signed, read back unsigned
  a->set_host("host-1");
  a->set_pid(321);
  a->set_ppid(12);
  a->set_program("orders");
  a->set_app("orders-app");
  a->set_agent_version("9.8.7");
  a->set_start_unix_ns(1111);
  a->set_mode("process");
  a->set_command_line("orders --port 1");
  b.mutable_drops()->set_queue_full(5);
  b.mutable_drops()->set_send_failed(6);
  b.mutable_drops()->set_encode_failed(7);
  b.mutable_drops()->set_steps_summarized(8);
  b.mutable_drops()->set_internal_errors(9);
  b.set_batch_seq(1);

  auto* tx = b.add_transactions();
  tx->set_txid(0x8000000000000001ull);
  tx->set_trace_id(std::string("\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36", 16));
  tx->set_parent_span_id(0x00f067aa0ba902b7ull);
  tx->set_name("GET /orders/7");
  tx->set_kind("http");
  tx->set_start_unix_ns(1700000000123456789ull);
  tx->set_elapsed_ns(3000);
  tx->set_cpu_ns(1200);
  tx->set_sql_ns(400);
  tx->set_fetch_ns(50);
  tx->set_call_ns(700);
  tx->set_sql_count(1);
  tx->set_call_count(1);
  tx->set_client_addr("127.0.0.1:5555");
  tx->set_status(503);
  tx->set_error("backend said no");
  tx->set_bytes_read(88);
  tx->set_bytes_written(99);
  tx->set_tid(322);
  add_attr(tx->mutable_attributes(), "query", "a=1&b=\"x\"");
  add_attr(tx->mutable_attributes(), "user_agent", "curl/8");

  auto step = [&](v1::StepKind k, int parent, uint64_t gap, uint64_t cpu) {
    auto* s = tx->add_steps();
    s->set_kind(k);
    s->set_parent(parent);
    s->set_gap_ns(gap);
    s->set_cpu_ns(cpu);
    return s;
  };
  step(v1::START, -1, 0, 0);
  auto* sock = step(v1::SOCKET, -1, 100, 10);
  sock->set_id(0xabcdef0123456789ull);
  sock->set_elapsed_ns(90);
  sock->set_error("ECONNREFUSED");
  add_attr(sock->mutable_attributes(), "addr", "10.1.2.3");
  add_attr(sock->mutable_attributes(), "port", "8005");
  add_attr(sock->mutable_attributes(), "localport", "13192");
  auto* sql = step(v1::SQL, 1, 500, 200);
  sql->set_text("SELECT * FROM t WHERE id = ?");
  sql->set_rows(42);
  sql->set_fetch_ns(50);
  sql->set_fingerprint(0x1122334455667788ull);
  sql->set_status(0);
  sql->set_changes(3);
  sql->set_elapsed_ns(400);
  sql->set_bytes_read(10);
  sql->set_bytes_written(20);
  auto* call = step(v1::HTTP_CALL, -1, 800, 300);
  call->set_text("http://backend:8080/stock");
  call->set_id(0x0102030405060708ull);
  call->set_status(200);
  call->set_elapsed_ns(700);
  add_attr(call->mutable_attributes(), "method", "GET");
  auto* dns = step(v1::DNS, -1, 100, 90);
  dns->set_text("backend");
  dns->set_elapsed_ns(80);
  add_attr(dns->mutable_attributes(), "addr", "10.1.2.4");
  auto* close = step(v1::SOCKET_CLOSE, -1, 500, 100);
  close->set_id(0xabcdef0123456789ull);
  close->set_bytes_read(51612);
  close->set_bytes_written(222);
  step(v1::MESSAGE, -1, 400, 300)->set_text("hello \xe2\x86\x92 world");
  step(v1::DB_CONNECT, -1, 300, 100)->set_text("dbname=orders host=db");
  step(v1::END, -1, 300, 100);

  auto* sum = tx->add_summary();
  sum->set_kind(v1::SQL);
  sum->set_fingerprint(0x99);
  sum->set_text("UPDATE t SET x = ?");
  sum->set_count(1000);
  sum->set_elapsed_ns(123456);
  sum->set_rows(7);
  sum->set_errors(2);
  sum->set_bytes_read(3);
  sum->set_bytes_written(4);
  return b;
}

TEST_F(StoreTest, RoundTripOfEveryField) {
  v1::Batch b = full_batch();
  WriteCounts c = write(b, 4242);
  EXPECT_EQ(c.transactions, 1u);
  EXPECT_EQ(c.steps, 9u);
  EXPECT_EQ(c.summaries, 1u);

  Reader r(db_);
  auto ids = r.last(10);
  ASSERT_EQ(ids.size(), 1u);
  auto t = r.load(ids[0]);
  ASSERT_TRUE(t);
  const auto& tx = b.transactions(0);
  EXPECT_EQ(t->txid, tx.txid());
  EXPECT_EQ(t->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(t->parent_span_id, tx.parent_span_id());
  EXPECT_EQ(t->app, "orders-app");
  EXPECT_EQ(t->name, "GET /orders/7");
  EXPECT_EQ(t->kind, "http");
  EXPECT_EQ(t->start_unix_ns, 1700000000123456789);
  EXPECT_EQ(t->end_unix_ns, 1700000000123456789 + 3000);
  EXPECT_EQ(t->elapsed_ns, 3000);
  EXPECT_EQ(t->cpu_ns, 1200);
  EXPECT_EQ(t->sql_ns, 400);
  EXPECT_EQ(t->fetch_ns, 50);
  EXPECT_EQ(t->call_ns, 700);
  EXPECT_EQ(t->sql_count, 1);
  EXPECT_EQ(t->call_count, 1);
  EXPECT_EQ(t->status, 503);
  EXPECT_EQ(t->error, "backend said no");
  EXPECT_EQ(t->client_addr, "127.0.0.1:5555");
  EXPECT_EQ(t->bytes_read, 88);
  EXPECT_EQ(t->bytes_written, 99);
  EXPECT_EQ(t->tid, 322);
  EXPECT_EQ(t->step_count, 9);
  Attributes want_attrs{{"query", "a=1&b=\"x\""}, {"user_agent", "curl/8"}};
  EXPECT_EQ(t->attributes, want_attrs);

  const Agent& a = t->agent;
  EXPECT_EQ(a.instance_id, 0xfedcba9876543210ull);
  EXPECT_EQ(a.host, "host-1");
  EXPECT_EQ(a.pid, 321);
  EXPECT_EQ(a.ppid, 12);
  EXPECT_EQ(a.program, "orders");
  EXPECT_EQ(a.app, "orders-app");
  EXPECT_EQ(a.agent_version, "9.8.7");
  EXPECT_EQ(a.start_unix_ns, 1111);
  EXPECT_EQ(a.mode, "process");
  EXPECT_EQ(a.command_line, "orders --port 1");
  EXPECT_EQ(a.first_seen_unix_ns, 4242);
  EXPECT_EQ(a.last_seen_unix_ns, 4242);
  EXPECT_EQ(a.batches, 1);
  EXPECT_EQ(a.drops_queue_full, 5);
  EXPECT_EQ(a.drops_send_failed, 6);
  EXPECT_EQ(a.drops_encode_failed, 7);
  EXPECT_EQ(a.steps_summarized, 8);
  EXPECT_EQ(a.internal_errors, 9);

  ASSERT_EQ(t->steps.size(), 9u);
  const char* kinds[] = {"START", "SOCKET", "SQL", "HTTP_CALL", "DNS", "SOCKET_CLOSE", "MESSAGE", "DB_CONNECT", "END"};
  for (int i = 0; i < 9; ++i) {
    const auto& s = t->steps[i];
    const auto& w = tx.steps(i);
    EXPECT_EQ(s.no, i);
    EXPECT_EQ(s.kind, kinds[i]);
    EXPECT_EQ(s.parent, w.parent());
    EXPECT_EQ(s.gap_ns, static_cast<int64_t>(w.gap_ns()));
    EXPECT_EQ(s.cpu_ns, static_cast<int64_t>(w.cpu_ns()));
    EXPECT_EQ(s.elapsed_ns, static_cast<int64_t>(w.elapsed_ns()));
    EXPECT_EQ(s.bytes_read, static_cast<int64_t>(w.bytes_read()));
    EXPECT_EQ(s.bytes_written, static_cast<int64_t>(w.bytes_written()));
    EXPECT_EQ(s.text, w.text());
    EXPECT_EQ(s.error, w.error());
    EXPECT_EQ(s.id.value_or(0), w.id());
  }
  const auto& sock = t->steps[1];
  EXPECT_EQ(sock.error, "ECONNREFUSED");
  ASSERT_TRUE(sock.attribute("localport"));
  EXPECT_EQ(*sock.attribute("localport"), "13192");
  EXPECT_FALSE(sock.rows);  // not SQL, not set: NULL
  const auto& sql = t->steps[2];
  EXPECT_EQ(sql.rows, 42);
  EXPECT_EQ(sql.fetch_ns, 50);
  EXPECT_EQ(sql.fingerprint, 0x1122334455667788ull);
  EXPECT_FALSE(sql.status);  // 0 is "not set"
  EXPECT_EQ(sql.changes, 3);
  const auto& call = t->steps[3];
  EXPECT_EQ(call.status, 200);
  EXPECT_EQ(call.id, 0x0102030405060708ull);
  EXPECT_FALSE(call.callee_txid);  // no callee stored
  EXPECT_EQ(t->steps[6].text, "hello \xe2\x86\x92 world");

  ASSERT_EQ(t->summary.size(), 1u);
  const auto& m = t->summary[0];
  EXPECT_EQ(m.kind, "SQL");
  EXPECT_EQ(m.fingerprint, 0x99u);
  EXPECT_EQ(m.text, "UPDATE t SET x = ?");
  EXPECT_EQ(m.count, 1000);
  EXPECT_EQ(m.elapsed_ns, 123456);
  EXPECT_EQ(m.rows, 7);
  EXPECT_EQ(m.errors, 2);
  EXPECT_EQ(m.bytes_read, 3);
  EXPECT_EQ(m.bytes_written, 4);
}

// The W3C tracestate and flags are kept as transaction attributes (no column: stores of any age alike),
// beside the agent's own attributes; none when the agent sent neither.
TEST_F(StoreTest, TraceStateAndFlagsAreAttributes) {
  v1::Batch b = full_batch();
  b.mutable_transactions(0)->set_tracestate("vendor1=a,vendor2=b");
  b.mutable_transactions(0)->set_trace_flags(3);
  write(b);
  Reader r(db_);
  auto t = r.load(r.last(1).at(0));
  ASSERT_TRUE(t);
  Attributes want{{"query", "a=1&b=\"x\""}, {"trace_flags", "03"}, {"tracestate", "vendor1=a,vendor2=b"},
                  {"user_agent", "curl/8"}};  // read back in key order
  EXPECT_EQ(t->attributes, want);

  v1::Batch only = full_batch();
  only.mutable_transactions(0)->clear_attributes();
  only.mutable_transactions(0)->set_txid(77);
  only.mutable_transactions(0)->set_trace_flags(2);
  write(only);
  auto u = r.load(r.last(1).at(0));
  ASSERT_TRUE(u);
  Attributes want2{{"trace_flags", "02"}};
  EXPECT_EQ(u->attributes, want2);
}

TEST_F(StoreTest, StacksOfStepsRoundTripInFrameOrder) {
  v1::Batch b = full_batch();
  auto* tx = b.mutable_transactions(0);
  auto* stack = tx->mutable_steps(2)->mutable_stack();
  for (auto [fn, mod, off] : {std::tuple{"caller()", "app", 0x10u}, {"", "libstripped.so", 0x2au}, {"main", "app", 0x99u}}) {
    auto* f = stack->add_frames();
    f->set_function(fn);
    f->set_module(mod);
    f->set_offset(off);
  }
  write(b, 4242);
  Reader r(db_);
  auto t = r.load(r.last(1)[0]);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->steps[2].stack.size(), 3u);
  EXPECT_EQ(format_frame(t->steps[2].stack[0]), "caller() (app+0x10)");
  EXPECT_EQ(format_frame(t->steps[2].stack[1]), "libstripped.so+0x2a");
  EXPECT_EQ(t->steps[2].stack[2].function, "main");
  for (size_t i = 0; i < t->steps.size(); ++i)
    EXPECT_EQ(t->steps[i].stack.empty(), i != 2) << i;
}

TEST_F(StoreTest, TextsAreStoredOnce) {
  v1::Batch b = full_batch();
  for (int i = 0; i < 3; ++i) *b.add_transactions() = b.transactions(0);
  write(b);
  write(b);  // and again in a later SQLite transaction
  // Distinct texts: SQL, URL, DNS host, message, DB_CONNECT, summary text.
  EXPECT_EQ(count("SELECT count(*) FROM texts"), 6);
  EXPECT_EQ(count("SELECT count(*) FROM steps WHERE kind='SQL'"), 8);
  EXPECT_EQ(count("SELECT count(DISTINCT text_id) FROM steps WHERE kind='SQL'"), 1);

  // A fresh writer (empty cache, as after a collector restart) finds the existing rows.
  Writer second(db_);
  second.begin();
  second.write(b, 1);
  second.commit();
  EXPECT_EQ(count("SELECT count(*) FROM texts"), 6);
  Reader r(db_);
  auto t = r.load(r.last(1)[0]);
  EXPECT_EQ(t->steps[2].text, "SELECT * FROM t WHERE id = ?");
}

TEST_F(StoreTest, DropCountersKeepTheLatestCumulativeValue) {
  v1::Batch b = full_batch();
  b.clear_transactions();
  write(b, 10);
  b.mutable_drops()->set_queue_full(50);
  b.mutable_drops()->set_send_failed(60);
  write(b, 20);
  // A late, older batch must not lower the counters.
  b.mutable_drops()->set_queue_full(1);
  write(b, 30);
  EXPECT_EQ(count("SELECT count(*) FROM agents"), 1);
  Reader r(db_);
  auto agents = r.agents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].batches, 3);
  EXPECT_EQ(agents[0].drops_queue_full, 50);
  EXPECT_EQ(agents[0].drops_send_failed, 60);
  EXPECT_EQ(agents[0].first_seen_unix_ns, 10);
  EXPECT_EQ(agents[0].last_seen_unix_ns, 30);

  // A second agent instance gets its own row.
  b.mutable_agent()->set_instance_id(77);
  write(b, 40);
  EXPECT_EQ(count("SELECT count(*) FROM agents"), 2);
}

// DropCounters 9 and 10 (CPU samples the perf ring lost, stacks not taken): per agent in agent_losses,
// the latest cumulative values; a transaction read back carries its process's totals.
TEST_F(StoreTest, CpuSamplesLostAndStacksMissedKeepTheLatestCumulativeValue) {
  v1::Batch b = full_batch();
  write(b, 10);
  EXPECT_EQ(count("SELECT count(*) FROM agent_losses"), 0);  // none yet: no row
  Reader r(db_);
  auto t = r.load(r.last(1)[0]);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->agent_cpu_samples_lost, 0);
  EXPECT_EQ(t->agent_stacks_missed, 0);

  b.clear_transactions();
  b.mutable_drops()->set_cpu_samples_lost(7);
  b.mutable_drops()->set_stacks_missed(3);
  write(b, 20);
  b.mutable_drops()->set_cpu_samples_lost(2);  // a late, older batch must not lower them
  b.mutable_drops()->set_stacks_missed(5);
  write(b, 30);
  EXPECT_EQ(count("SELECT count(*) FROM agent_losses"), 1);
  EXPECT_EQ(count("SELECT cpu_samples_lost FROM agent_losses"), 7);
  EXPECT_EQ(count("SELECT stacks_missed FROM agent_losses"), 5);
  Reader r2(db_);
  t = r2.load(r2.last(1)[0]);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->agent_cpu_samples_lost, 7);
  EXPECT_EQ(t->agent_stacks_missed, 5);
}

TEST_F(StoreTest, DropWindowsKeepOneRowPerWindowWithTheLargestCountAndWidestBounds) {
  v1::Batch b = full_batch();
  b.clear_transactions();
  auto* w = b.add_drop_windows();
  w->set_seq(1);
  w->set_reason(v1::SEND_FAILED);
  w->set_count(10);
  w->set_first_unix_ns(5000);
  w->set_last_unix_ns(6000);
  write(b, 10);
  w->set_count(25);  // still open: it grew
  w->set_last_unix_ns(9000);
  write(b, 20);
  w->set_closed(true);
  write(b, 30);
  w->set_count(10);  // a late repeat of an older state changes nothing
  w->set_last_unix_ns(6000);
  w->set_closed(false);
  write(b, 40);
  auto* q = b.add_drop_windows();
  q->set_seq(2);
  q->set_reason(v1::QUEUE_FULL);
  q->set_count(3);
  q->set_first_unix_ns(7000);
  q->set_last_unix_ns(7000);
  write(b, 50);

  Reader r(db_);
  auto ws = r.drop_windows();
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].reason, "send_failed");
  EXPECT_EQ(ws[0].count, 25);
  EXPECT_EQ(ws[0].first_unix_ns, 5000);
  EXPECT_EQ(ws[0].last_unix_ns, 9000);
  EXPECT_TRUE(ws[0].closed);
  EXPECT_EQ(ws[0].reported_unix_ns, 10);
  EXPECT_EQ(ws[0].agent.instance_id, b.agent().instance_id());
  EXPECT_EQ(ws[1].reason, "queue_full");
  EXPECT_EQ(ws[1].count, 3);
  EXPECT_FALSE(ws[1].closed);
  EXPECT_TRUE(r.drop_windows("no-such-app").empty());
}

TEST_F(StoreTest, TransactionsSentButNeverReceivedBecomeALostInFlightWindow) {
  v1::Batch b = full_batch();
  const int per_batch = b.transactions_size();
  ASSERT_GT(per_batch, 0);
  b.set_sent_unix_ns(1000);
  write(b);  // sent_transactions 0: the agent's first batch
  // The next two batches went into a connection the collector closed before reading them.
  b.set_sent_transactions(3 * per_batch);
  b.set_sent_unix_ns(4000);
  for (auto& t : *b.mutable_transactions()) t.set_txid(t.txid() + 1000);
  write(b);
  // Nothing missing since: no new window.
  b.set_sent_transactions(4 * per_batch);
  b.set_sent_unix_ns(5000);
  for (auto& t : *b.mutable_transactions()) t.set_txid(t.txid() + 1000);
  write(b);

  Reader r(db_);
  auto ws = r.drop_windows();
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].reason, "lost_in_flight");
  EXPECT_EQ(ws[0].count, 2 * per_batch);
  EXPECT_EQ(ws[0].seq, -1);
  EXPECT_EQ(ws[0].first_unix_ns, 1000);  // after the last batch received ...
  EXPECT_EQ(ws[0].last_unix_ns, 4000);   // ... before the one that told
  EXPECT_EQ(count("SELECT transactions FROM agent_received"), 5 * per_batch);

  // An agent whose earlier batches went to another store claims nothing lost here.
  b.mutable_agent()->set_instance_id(4242);
  b.set_sent_transactions(1000);
  for (auto& t : *b.mutable_transactions()) t.set_txid(t.txid() + 1000);
  write(b);
  EXPECT_EQ(r.drop_windows().size(), 1u);
}

// A caller whose HTTP_CALL sent span `span`, and the callee transaction that received it.
v1::Batch caller_batch(uint64_t span) {
  v1::Batch b = full_batch();
  b.mutable_transactions(0)->mutable_steps(3)->set_id(span);
  b.mutable_transactions(0)->set_txid(0xca11e5);
  return b;
}
v1::Batch callee_batch(uint64_t span) {
  v1::Batch b = full_batch();
  b.mutable_agent()->set_instance_id(0xbacc);
  auto* tx = b.mutable_transactions(0);
  tx->set_txid(0xca11ee);
  tx->set_parent_span_id(span);
  tx->mutable_steps(3)->set_id(0);  // no outbound call of its own
  return b;
}

TEST_F(StoreTest, CallLinkedWhenCallerArrivesFirst) {
  EXPECT_EQ(write(caller_batch(0x5a5a)).links, 0u);
  EXPECT_EQ(write(callee_batch(0x5a5a)).links, 1u);
  Reader r(db_);
  auto caller = r.load(r.by_txid(0xca11e5)[0]);
  EXPECT_EQ(caller->steps[3].callee_txid, 0xca11eeu);
}

TEST_F(StoreTest, CallLinkedWhenCalleeArrivesFirst) {
  EXPECT_EQ(write(callee_batch(0x5a5a)).links, 0u);
  EXPECT_EQ(write(caller_batch(0x5a5a)).links, 1u);
  Reader r(db_);
  auto caller = r.load(r.by_txid(0xca11e5)[0]);
  EXPECT_EQ(caller->steps[3].callee_txid, 0xca11eeu);
}

TEST_F(StoreTest, CallLinkedWithinOneSqliteTransactionAndNotToStrangers) {
  writer_->begin();
  writer_->write(callee_batch(0x77), 1);
  writer_->write(caller_batch(0x77), 1);
  writer_->write(caller_batch(0x78), 1);  // nobody answered span 0x78
  writer_->commit();
  EXPECT_EQ(count("SELECT count(*) FROM steps WHERE kind='HTTP_CALL' AND callee_tx_id IS NOT NULL"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM steps WHERE kind='HTTP_CALL' AND ref_id=0x78 AND callee_tx_id IS NULL"), 1);
}

TEST_F(StoreTest, ReaderSelections) {
  testing::SynthOptions o;
  std::mt19937_64 rng(7);
  v1::Batch b = testing::make_batch(o, 1);
  for (int i = 0; i < 20; ++i) testing::add_transaction(b, o, i, rng, 1000000000ull * (i + 1));
  o.app = "other";
  o.instance_id = 99;
  v1::Batch b2 = testing::make_batch(o, 1);
  testing::add_transaction(b2, o, 100, rng, 1000000000ull * 50);
  write(b);
  write(b2);
  Reader r(db_);
  EXPECT_EQ(r.transaction_count(), 21);
  auto last = r.last(3);
  ASSERT_EQ(last.size(), 3u);
  auto newest = r.load(last.back());
  EXPECT_EQ(newest->app, "other");  // started last
  auto last_syn = r.last(2, "synthetic");
  ASSERT_EQ(last_syn.size(), 2u);
  EXPECT_LT(r.load(last_syn[0])->start_unix_ns, r.load(last_syn[1])->start_unix_ns);  // oldest first
  auto slow = r.slowest(5);
  ASSERT_EQ(slow.size(), 5u);
  for (size_t i = 1; i < slow.size(); ++i) EXPECT_GE(r.load(slow[i - 1])->elapsed_ns, r.load(slow[i])->elapsed_ns);
  auto by_id = r.by_txid(b.transactions(4).txid());
  ASSERT_EQ(by_id.size(), 1u);
  EXPECT_EQ(r.load(by_id[0])->name, b.transactions(4).name());
  auto by_trace = r.by_trace(trace_hex(b.transactions(5).trace_id()));
  ASSERT_EQ(by_trace.size(), 1u);
  EXPECT_TRUE(r.by_txid(b.transactions(4).txid(), "other").empty());
  EXPECT_FALSE(r.load(123456));
}

// An unattributed container of agent `instance` whose first HTTP_CALL sent span `span`.
v1::Batch container_batch(uint64_t span, uint64_t instance = 0xc0) {
  testing::SynthOptions o;
  o.app = "front";
  o.instance_id = instance;
  std::mt19937_64 rng(instance);
  v1::Batch b = testing::make_batch(o, 1);
  auto* c = testing::add_unattributed(b, 1, 7, rng, 2000000000ull);  // HTTP_CALL, SOCKET, ..., HTTP_CALL
  c->mutable_steps(1)->set_id(span);
  return b;
}

TEST_F(StoreTest, ContainerStoredAsATransactionAndItsCallsLinkedInBothOrders) {
  EXPECT_EQ(write(container_batch(0x5a5a)).links, 0u);
  EXPECT_EQ(write(callee_batch(0x5a5a)).links, 1u);
  EXPECT_EQ(write(callee_batch(0x6b6b)).links, 0u);
  EXPECT_EQ(write(container_batch(0x6b6b, 0xc1)).links, 1u);
  EXPECT_EQ(count("SELECT count(*) FROM transactions WHERE kind = 'unattributed' AND name = 'unattributed steps'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM steps s JOIN transactions t ON t.id = s.tx_id"
                  " WHERE t.kind = 'unattributed' AND s.kind = 'HTTP_CALL' AND s.callee_tx_id IS NOT NULL"),
            2);
  Reader r(db_);
  auto c = r.load(r.unattributed_containers()[0]);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "unattributed");
  EXPECT_EQ(c->steps[1].kind, "HTTP_CALL");
  EXPECT_EQ(c->steps[1].callee_txid, 0xca11eeu);
}

TEST_F(StoreTest, ReaderKeepsContainersOutOfTransactionSelections) {
  testing::SynthOptions o;
  o.app = "front";
  o.instance_id = 0xc0;
  std::mt19937_64 rng(3);
  v1::Batch b = testing::make_batch(o, 1);
  for (int i = 0; i < 3; ++i) testing::add_transaction(b, o, i, rng, 1000000000ull * (i + 1));
  // The container ends last, is the slowest, and shares a trace with transaction 0.
  auto* c = testing::add_unattributed(b, 1, 13, rng, 1000000000ull * 9);
  c->set_elapsed_ns(c->elapsed_ns() + 60000000000ull);
  c->set_trace_id(b.transactions(0).trace_id());
  // Some steps folded past the step limit: they count as unattributed steps too.
  auto* folded = c->add_summary();
  folded->set_kind(v1::HTTP_CALL);
  folded->set_text("http://backend:8080/b/x");
  folded->set_count(40);
  folded->set_elapsed_ns(1000);
  // A second process with a container of its own.
  o.app = "back";
  o.instance_id = 0xb0;
  v1::Batch b2 = testing::make_batch(o, 1);
  testing::add_unattributed(b2, 2, 2, rng, 1000000000ull * 5);
  write(b);
  write(b2);

  Reader r(db_);
  EXPECT_EQ(r.transaction_count(), 3);
  EXPECT_EQ(r.last(10).size(), 3u);
  EXPECT_EQ(r.last(1, "front").size(), 1u);
  EXPECT_EQ(r.load(r.last(1)[0])->kind, "http");
  auto slow = r.slowest(10);
  ASSERT_EQ(slow.size(), 3u);
  EXPECT_EQ(r.load(slow[0])->kind, "http");
  EXPECT_EQ(r.by_trace(trace_hex(b.transactions(0).trace_id())).size(), 1u);
  EXPECT_EQ(r.by_txid(c->txid()).size(), 1u);  // --id may still print a container

  auto containers = r.unattributed_containers();
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(r.load(containers[0])->app, "front");  // by agent (front's was stored first)
  EXPECT_EQ(r.unattributed_containers("back").size(), 1u);
  EXPECT_TRUE(r.unattributed_containers("nobody").empty());

  // front: 13 steps cycling HTTP_CALL, SOCKET, SQL, DNS, SOCKET_CLOSE, DB_CONNECT (3, 2, 2, 2, 2, 2)
  // plus 40 folded calls; back: HTTP_CALL, SOCKET.
  std::map<std::string, int64_t> front, back;
  for (const auto& u : r.unattributed_counts()) (u.app == "front" ? front : back)[u.kind] += u.count;
  EXPECT_EQ(front, (std::map<std::string, int64_t>{{"DB_CONNECT", 2}, {"DNS", 2}, {"HTTP_CALL", 43}, {"SOCKET", 2},
                                                  {"SOCKET_CLOSE", 2}, {"SQL", 2}}));
  EXPECT_EQ(back, (std::map<std::string, int64_t>{{"HTTP_CALL", 1}, {"SOCKET", 1}}));
  auto only_back = r.unattributed_counts("back");
  ASSERT_EQ(only_back.size(), 2u);
  EXPECT_EQ(only_back[0].kind, "HTTP_CALL");
}

TEST_F(StoreTest, OpenErrorsAreClear) {
  EXPECT_THROW(open_store((dir_ / "missing.db").string(), OpenMode::kReadOnly), StoreError);
  std::string junk = (dir_ / "junk.db").string();
  FILE* f = std::fopen(junk.c_str(), "w");
  std::fputs("this is not a database, just text that is long enough to fill a header......", f);
  std::fclose(f);
  try {
    open_store(junk, OpenMode::kReadOnly);
    FAIL() << "opened a text file";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not a txray store"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_store(junk, OpenMode::kCreate), StoreError);

  // Somebody else's SQLite database: never written to.
  std::string foreign = (dir_ / "foreign.db").string();
  {
    sqlite3* h = nullptr;
    sqlite3_open(foreign.c_str(), &h);
    sqlite3_exec(h, "CREATE TABLE people(name TEXT)", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  EXPECT_THROW(open_store(foreign, OpenMode::kCreate), StoreError);
  EXPECT_THROW(open_store(foreign, OpenMode::kReadOnly), StoreError);

  // Our own store opens again, read-only and for writing (the schema script is idempotent).
  write(full_batch());
  EXPECT_NO_THROW(open_store(path_, OpenMode::kReadOnly));
  EXPECT_NO_THROW(open_store(path_, OpenMode::kCreate));
}

TEST(Ids, HexForms) {
  EXPECT_EQ(hex16(0), "0000000000000000");
  EXPECT_EQ(hex16(0xfedcba9876543210ull), "fedcba9876543210");
  EXPECT_EQ(parse_hex64("FEDCBA9876543210"), 0xfedcba9876543210ull);
  EXPECT_EQ(parse_hex64("0x1f"), 0x1fu);
  EXPECT_FALSE(parse_hex64(""));
  EXPECT_FALSE(parse_hex64("12345678901234567"));
  EXPECT_FALSE(parse_hex64("xyz"));
  EXPECT_TRUE(is_trace_hex("4bf92f3577b34da6a3ce929d0e0e4736"));
  EXPECT_FALSE(is_trace_hex("4bf92f3577b34da6a3ce929d0e0e473"));
  EXPECT_EQ(trace_hex("short"), "");
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace txray
