// The switch-checked clock's own page where the perf sampler does not run (cpu/clock_page.h): a thread
// opens it at its kClockPageAfter-th transaction, not before; from then on its transactions' CPU clock
// reads mostly skip the system call, and their CPU stays what the kernel's thread clock says; the page
// is gone with the thread. A process of its own (configure sets process-wide state). Skipped where
// perf_event_open is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "cpu/clock.h"
#include "cpu/clock_page.h"
#include "core/config.h"
#include "core/transaction.h"

using namespace txray;

namespace {

std::atomic<int> g_n{0};
std::vector<Transaction*> g_done;
void keep(Transaction* t) {
  g_done.push_back(t);  // one thread at a time here
  g_n.fetch_add(1);
}

__attribute__((noinline)) uint64_t spin(uint64_t x, int n) {
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  asm volatile("" : "+r"(x));
  return x;
}

}  // namespace

TEST(ClockPage, OpenedAtTheThreadsSixteenthTransactionThenReadsSkipTheSystemCall) {
  Config c;
  c.cpu_samples = false;  // no perf sampler: the clock gets a page of its own
  set_config(c);
  clock::page::configure(c, false);
  tx::set_sink(keep);
  std::thread th([] {
    for (uint32_t i = 0; i < clock::page::kClockPageAfter + 40; ++i) {
      Transaction* t = tx::begin("tx", "http");
      spin(1, 20000);
      tx::end(t, 0, "");
    }
  });
  th.join();
  tx::set_sink(nullptr);
  if (clock::page::opened() == 0) GTEST_SKIP() << "perf_event_open refused here: the system call stays";
  ASSERT_EQ(clock::switch_checked_state(), 1);
  ASSERT_EQ(g_done.size(), clock::page::kClockPageAfter + 40);
  // Before the page: both reads of every transaction were system calls.
  for (uint32_t i = 0; i + 1 < clock::page::kClockPageAfter; ++i) EXPECT_EQ(g_done[i]->cpu_clock_syscalls, 2u) << i;
  // After it: most transactions read the clock without a system call at all (a loaded VM preempts some).
  int without = 0;
  for (size_t i = clock::page::kClockPageAfter; i < g_done.size(); ++i) {
    without += g_done[i]->cpu_clock_syscalls == 0;
    EXPECT_GT(g_done[i]->cpu_ns, 0u);
    EXPECT_LT(g_done[i]->cpu_ns, g_done[i]->elapsed_ns + 1);  // CPU never exceeds the wall time
  }
  // How many depends on preemption; at least one shows the page works (each transaction is a few µs).
  EXPECT_GE(without, 1) << "transactions with no clock system call, of 40";
  for (Transaction* t : g_done) tx::recycle(t);
  g_done.clear();
}
