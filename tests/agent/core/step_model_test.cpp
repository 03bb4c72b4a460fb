// The step model: GAP/CPU_T sums, nesting, the step limit and its summaries, stale handles.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/mman.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/counters.h"
#include "core/recorder.h"
#include "support/recorder_fixture.h"
#include "support/test_support.h"
#include "core/transaction.h"

using namespace txray;
using txray::test::Collected;
using txray::test::FakeClock;

// Each test's transaction is "GET /x" of kind "http", ended with status 200.
struct StepModelTest : test::RecorderFixture {
  StepModelTest() : RecorderFixture("GET /x", "http", 200) {}
};

TEST_F(StepModelTest, GapsAndCpuAddUpExactlyAndLandInTheRightRow) {
  Transaction* t = begin();
  FakeClock::advance(1'000, 100);
  StepRef a = rec::open(t, StepKind::SOCKET);
  FakeClock::advance(50'000'000, 0);  // waiting on the socket: wall time only
  rec::close(a);
  FakeClock::advance(60'000'000, 50'000'000);  // a CPU burn after the socket
  rec::add(t, StepKind::MESSAGE, "burned");
  FakeClock::advance(7, 3);
  Transaction& done = end(t);
  ASSERT_EQ(done.steps.size(), 4u);
  EXPECT_EQ(test::gap_sum(done), done.elapsed_ns);
  EXPECT_EQ(test::cpu_sum(done), done.cpu_ns);
  EXPECT_EQ(done.elapsed_ns, 1'000u + 50'000'000 + 60'000'000 + 7);
  EXPECT_EQ(done.steps[1].elapsed_ns, 50'000'000u);
  EXPECT_EQ(done.steps[2].kind, StepKind::MESSAGE);
  EXPECT_EQ(done.steps[2].gap_ns, 110'000'000u);  // from the SOCKET row's start
  EXPECT_EQ(done.steps[2].cpu_ns, 50'000'000u);   // the burn shows in the row after it
  EXPECT_EQ(done.steps[3].kind, StepKind::END);
}

TEST_F(StepModelTest, NestingFollowsOpenCalls) {
  Transaction* t = begin();
  StepRef outer = rec::open(t, StepKind::HTTP_CALL);
  StepRef dns = rec::add(t, StepKind::DNS, "example");
  StepRef inner = rec::open(t, StepKind::SOCKET);
  rec::add(t, StepKind::MESSAGE, "inside");
  rec::close(inner);
  rec::close(outer);
  rec::add(t, StepKind::MESSAGE, "after");
  Transaction& done = end(t);
  ASSERT_EQ(done.steps.size(), 7u);
  EXPECT_EQ(done.steps[1].parent, -1);
  EXPECT_EQ(done.steps[2].parent, 1);  // DNS under HTTP_CALL
  EXPECT_EQ(done.steps[3].parent, 1);  // SOCKET under HTTP_CALL
  EXPECT_EQ(done.steps[4].parent, 3);  // MESSAGE under SOCKET
  EXPECT_EQ(done.steps[5].parent, -1);
  EXPECT_EQ(done.steps[6].parent, -1);  // END
  (void)dns;
}

TEST_F(StepModelTest, ClosingAnOuterStepClosesTheInnerOnes) {
  Transaction* t = begin();
  StepRef outer = rec::open(t, StepKind::SQL);
  FakeClock::advance(10);
  rec::open(t, StepKind::SOCKET);  // never closed by its hook
  FakeClock::advance(10);
  rec::close(outer);
  Transaction& done = end(t);
  EXPECT_EQ(done.steps[1].elapsed_ns, 20u);
  EXPECT_EQ(done.steps[2].elapsed_ns, 10u);
  EXPECT_EQ(done.steps[3].parent, -1);
}

TEST_F(StepModelTest, FieldsAndStaleHandles) {
  Transaction* t = begin();
  StepRef s = rec::open(t, StepKind::SQL);
  rec::set_text(s, "select 1");
  rec::set_rows(s, 3);
  rec::set_status(s, 101);
  rec::set_fingerprint(s, 77);
  rec::add_attr(s, "db", "main");
  rec::add_bytes(s, 10, 20);
  rec::close(s);
  rec::add_totals(t, {.sql_ns = 5, .fetch_ns = 1, .sql_count = 1});
  Transaction& done = end(t);
  const Step& st = done.steps[1];
  EXPECT_EQ(st.text, "select 1");
  EXPECT_EQ(st.rows, 3);
  EXPECT_EQ(st.status, 101);
  EXPECT_EQ(st.fingerprint, 77u);
  ASSERT_EQ(st.attrs.size(), 1u);
  EXPECT_EQ(st.bytes_written, 20u);
  EXPECT_EQ(done.totals.sql_ns, 5u);
  EXPECT_EQ(done.totals.sql_count, 1u);
  // The transaction is gone: a handle to it does nothing (and does not crash).
  rec::set_text(s, "late");
  rec::close(s);
  EXPECT_EQ(rec::current_request(), nullptr);
  EXPECT_FALSE(rec::open(nullptr, StepKind::SQL));
}

TEST_F(StepModelTest, StepLimitFoldsIntoSummariesAndKeepsTotalsExact) {
  Config c;
  c.max_steps = 10;
  set_config(c);
  uint64_t summarized_before = counters().steps_summarized.load();
  Transaction* t = begin();
  for (int i = 0; i < 100; ++i) {
    FakeClock::advance(1000, 10);
    StepRef s = rec::open(t, StepKind::SQL);
    rec::set_text(s, i % 2 ? "select a" : "select b");
    rec::set_rows(s, 2);
    FakeClock::advance(500, 5);
    rec::close(s);
  }
  FakeClock::advance(1, 1);
  Transaction& done = end(t);
  ASSERT_EQ(done.steps.size(), 10u);  // START, 8 SQL rows, END
  EXPECT_EQ(done.steps.back().kind, StepKind::END);
  EXPECT_EQ(test::gap_sum(done), done.elapsed_ns);
  EXPECT_EQ(test::cpu_sum(done), done.cpu_ns);
  EXPECT_EQ(done.elapsed_ns, 100u * 1500 + 1);
  EXPECT_EQ(done.cpu_ns, 100u * 15 + 1);
  uint64_t folded = 0, rows = 0, elapsed = 0;
  for (auto& s : done.summary) {
    folded += s.count;
    rows += uint64_t(s.rows);
    elapsed += s.elapsed_ns;
  }
  EXPECT_EQ(folded, 92u);
  EXPECT_EQ(rows, 92u * 2);
  EXPECT_EQ(elapsed, 92u * 500);
  EXPECT_EQ(done.summary.size(), 2u);  // one per distinct text
  EXPECT_EQ(counters().steps_summarized.load() - summarized_before, 92u);
}

TEST_F(StepModelTest, FoldedStepsInsideAnOpenRowKeepTheSums) {
  Config c;
  c.max_steps = 4;
  set_config(c);
  Transaction* t = begin();
  StepRef outer = rec::open(t, StepKind::HTTP_CALL);
  for (int i = 0; i < 5; ++i) {
    FakeClock::advance(100, 100);
    rec::add(t, StepKind::DNS, "x");
  }
  rec::close(outer);
  Transaction& done = end(t);
  EXPECT_EQ(test::gap_sum(done), done.elapsed_ns);
  EXPECT_EQ(test::cpu_sum(done), done.cpu_ns);
  EXPECT_EQ(done.cpu_ns, 500u);
  EXPECT_EQ(done.steps.back().kind, StepKind::END);
}

TEST_F(StepModelTest, EndIsIdempotentAndFirstErrorWins) {
  Transaction* t = begin();
  rec::mark_failed(t, "first");
  rec::mark_failed(t, "second");
  tx::end(t, 500, "third");
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->error, "first");
}

TEST_F(StepModelTest, SharedTransactionCollectsStepsFromEveryThread) {
  Transaction* t = tx::begin("batch job", "process", true);
  tx::set_process_transaction(t);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([] {
      for (int j = 0; j < 50; ++j) rec::add(rec::current(), StepKind::MESSAGE, "m");
    });
  for (auto& th : threads) th.join();
  tx::end(t, 0, "");
  ASSERT_EQ(Collected::txs.size(), 1u);
  auto& done = *Collected::txs[0];
  EXPECT_EQ(done.steps.size(), 202u);
  EXPECT_EQ(test::gap_sum(done), done.elapsed_ns);
  EXPECT_EQ(test::cpu_sum(done), done.cpu_ns);
  EXPECT_EQ(tx::process_transaction(), nullptr);
}

namespace {
// A thread of its own that runs what it is given, one thing at a time: run() returns when it is done.
// Two of them interleave steps on one shared transaction in an exact order.
class Worker {
 public:
  Worker() : th_([this] { loop(); }) {}
  ~Worker() {
    run(nullptr);
    th_.join();
  }
  void run(std::function<void()> fn) {
    std::unique_lock<std::mutex> lk(mu_);
    job_ = fn ? std::move(fn) : std::function<void()>([this] { quit_ = true; });
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lk, [this] { return !pending_; });
  }

 private:
  void loop() {
    while (!quit_) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [this] { return pending_; });
      job_();
      pending_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool pending_ = false;
  bool quit_ = false;
  std::thread th_;
};
}  // namespace

// Process mode: two threads' statements overlap in time on the one transaction. Each thread's call is
// its own: thread A's close must not close B's statement still running (B's row would get A's time,
// be nested under A's, and, past the step limit, be folded away before B's own close counted it: 8
// threads x 200 statements gave sql_count 1,311 of 1,600).
TEST_F(StepModelTest, OverlappingStatementsOfTwoThreadsEachCountOnce) {
  for (int max_steps : {1000, 4}) {  // rows; and past the limit (START + 2 rows: both statements fold)
    SCOPED_TRACE(max_steps);
    Config c;
    c.max_steps = uint32_t(max_steps);
    set_config(c);
    Collected::install();
    Transaction* t = tx::begin("batch job", "process", true);
    tx::set_process_transaction(t);
    rec::add(t, StepKind::MESSAGE, "one");
    rec::add(t, StepKind::MESSAGE, "two");
    Worker a, b;
    StepRef sa, sb;
    SharedText text_a("select a"), text_b("select b");
    a.run([&] { sa = rec::open(rec::current(), StepKind::SQL); });
    FakeClock::advance(100);
    b.run([&] { sb = rec::open(rec::current(), StepKind::SQL); });
    FakeClock::advance(200);
    uint64_t ea = 0, eb = 0;
    a.run([&] { ea = rec::close_sql(sa, {.text = &text_a, .fingerprint = 1}); });
    FakeClock::advance(700);
    b.run([&] { eb = rec::close_sql(sb, {.text = &text_b, .fingerprint = 2}); });
    tx::end(t, 0, "");
    ASSERT_EQ(Collected::txs.size(), 1u);
    const Transaction& done = *Collected::txs[0];
    EXPECT_EQ(ea, 300u);
    EXPECT_EQ(eb, 900u);  // B's own time, not cut short at A's close
    EXPECT_EQ(done.totals.sql_count, 2u);
    EXPECT_EQ(done.totals.sql_ns, 1200u);
    uint64_t count = 0, elapsed = 0;
    for (const Step& s : done.steps)
      if (s.kind == StepKind::SQL) {
        ++count;
        elapsed += s.elapsed_ns;
        EXPECT_EQ(s.parent, -1);  // neither statement is inside the other thread's
      }
    for (const StepSummary& m : done.summary)
      if (m.kind == StepKind::SQL) {
        count += m.count;
        elapsed += m.elapsed_ns;
      }
    EXPECT_EQ(count, 2u);
    EXPECT_EQ(elapsed, done.totals.sql_ns);
    EXPECT_EQ(done.summary.empty(), max_steps == 1000);
    EXPECT_EQ(test::gap_sum(done), done.elapsed_ns);
  }
}

// Nesting stays per thread: a thread's statement inside its own open call is that call's child, and
// closing the call closes it too; another thread's open call is left alone.
TEST_F(StepModelTest, NestingIsPerThreadInASharedTransaction) {
  Transaction* t = tx::begin("batch job", "process", true);
  tx::set_process_transaction(t);
  Worker a, b;
  StepRef call, inner, other;
  a.run([&] { call = rec::open(rec::current(), StepKind::HTTP_CALL); });
  b.run([&] { other = rec::open(rec::current(), StepKind::SQL); });
  a.run([&] { inner = rec::open(rec::current(), StepKind::DNS); });
  FakeClock::advance(50);
  a.run([&] { rec::close(call); });  // closes its own DNS step too, not B's statement
  FakeClock::advance(50);
  b.run([&] { rec::close(other); });
  tx::end(t, 0, "");
  ASSERT_EQ(Collected::txs.size(), 1u);
  const Transaction& done = *Collected::txs[0];
  ASSERT_EQ(done.steps.size(), 5u);
  EXPECT_EQ(done.steps[1].kind, StepKind::HTTP_CALL);
  EXPECT_EQ(done.steps[2].kind, StepKind::SQL);
  EXPECT_EQ(done.steps[2].parent, -1);
  EXPECT_EQ(done.steps[2].elapsed_ns, 100u);
  EXPECT_EQ(done.steps[3].kind, StepKind::DNS);
  EXPECT_EQ(done.steps[3].parent, 1);
  EXPECT_EQ(done.steps[3].elapsed_ns, 50u);
  EXPECT_EQ(done.steps[1].elapsed_ns, 50u);
}

// A thread that made a request current and exited (pthread_exit mid-request) while its connection stays
// open; another thread ends the request later. The thread's stack (and with it its TLS) is unmapped by
// then: end() must not write there (it did: the owner slot was in the dead thread's TLS, a SIGSEGV in a
// thread-per-connection server; tests/reliability/test_threads.py). The stack is the test's own, so it
// is certainly unmapped, not just cached by glibc.
TEST_F(StepModelTest, EndAfterTheOwnerThreadExitedAndItsStackIsGone) {
  std::vector<Transaction*> left;
  for (int i = 0; i < 8; ++i) {
    constexpr size_t kStack = 256 * 1024;
    void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(stack, MAP_FAILED);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, kStack);
    Transaction* t = nullptr;
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, &attr, [](void* arg) -> void* {
      auto* out = static_cast<Transaction**>(arg);
      *out = tx::begin("GET /left", "http");
      tx::make_current(*out);
      rec::add(*out, StepKind::MESSAGE, "before pthread_exit");
      pthread_exit(nullptr);
    }, &t), 0);
    pthread_join(th, nullptr);
    pthread_attr_destroy(&attr);
    ASSERT_EQ(munmap(stack, kStack), 0);
    ASSERT_NE(t, nullptr);
    left.push_back(t);
  }
  // A new thread reuses a released slot: the late end() of a transaction of the dead thread must leave
  // the new thread's current transaction alone.
  Transaction* mine = begin();
  for (Transaction* t : left) tx::end(t, 200, "");
  EXPECT_EQ(tx::thread_current(), mine);
  std::thread([] {
    Transaction* other = tx::begin("GET /other", "http");
    tx::make_current(other);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(tx::thread_current(), other);
    tx::end(other, 200, "");
    EXPECT_EQ(tx::thread_current(), nullptr);
  }).join();
  end(mine);
  ASSERT_EQ(Collected::txs.size(), 10u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(Collected::txs[i]->name, "GET /left");
    EXPECT_EQ(Collected::txs[i]->steps.size(), 3u);
  }
}

// The exit hook runs on a thread that exits with a current transaction (the C API ends its own there).
TEST_F(StepModelTest, ThreadExitHookRunsOnlyForThreadsWithATransaction) {
  static std::atomic<int> calls{0};
  static Transaction* seen = nullptr;
  calls = 0;
  tx::set_thread_exit_hook([] {
    ++calls;
    seen = tx::thread_current();
    if (seen) tx::end(seen, 0, "thread exited");
  });
  std::thread([] { tx::make_current(tx::begin("api work", "api")); }).join();
  std::thread([] {}).join();  // never had a transaction: no slot, no hook
  tx::set_thread_exit_hook(nullptr);
  EXPECT_EQ(calls.load(), 1);
  ASSERT_EQ(Collected::txs.size(), 1u);
  EXPECT_EQ(Collected::txs[0]->name, "api work");
  EXPECT_EQ(Collected::txs[0]->error, "thread exited");
}
