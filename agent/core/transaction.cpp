#include "transaction.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "counters.h"
#include "ids.h"
#include "step_rows.h"

namespace txray::tx {
namespace {

thread_local std::atomic<Transaction*> t_current __attribute__((tls_model("initial-exec"))){nullptr};
thread_local uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<Transaction*> g_process_tx{nullptr};
std::atomic<Sink> g_sink{nullptr};

}  // namespace

uint32_t this_tid() {
  if (t_tid == 0) t_tid = uint32_t(syscall(SYS_gettid));
  return t_tid;
}
void reset_tid_after_fork() { t_tid = 0; }

Transaction* begin(std::string_view name, std::string_view kind, bool shared) {
  auto* t = new Transaction;
  t->txid = ids::next();
  ids::trace_id(t->trace_id);
  t->name.assign(name.substr(0, 1024));
  t->kind.assign(kind);
  t->shared = shared;
  t->tid = this_tid();
  t->max_rows = config().max_steps < 3 ? 3 : config().max_steps;
  t->start_unix_ns = clock::unix_ns();
  t->steps.reserve(4);  // START, END and a couple of steps without reallocating
  rows::start(t);
  return t;
}

void end(Transaction* t, int32_t status, std::string_view error) {
  if (!t) return;
  {
    std::unique_lock<std::mutex> lock(t->mu, std::defer_lock);
    if (t->shared) lock.lock();
    if (t->finished) return;
    t->finished = true;
    t->status = status;
    if (!error.empty() && t->error.empty()) t->error.assign(error.substr(0, 1024));
    rows::finish(t);
  }
  if (auto* slot = t->owner_slot) {
    Transaction* expected = t;
    slot->compare_exchange_strong(expected, nullptr);
  }
  Transaction* expected = t;
  g_process_tx.compare_exchange_strong(expected, nullptr);
  if (Sink s = g_sink.load(std::memory_order_acquire)) s(t);
  else delete t;
}

void make_current(Transaction* t) {
  t_current.store(t, std::memory_order_relaxed);
  if (t) t->owner_slot = &t_current;
}

Transaction* thread_current() { return t_current.load(std::memory_order_relaxed); }

void set_process_transaction(Transaction* t) { g_process_tx.store(t, std::memory_order_release); }
Transaction* process_transaction() { return g_process_tx.load(std::memory_order_acquire); }

void set_sink(Sink s) { g_sink.store(s, std::memory_order_release); }

void forget_current_after_fork() {
  t_current.store(nullptr, std::memory_order_relaxed);
  g_process_tx.store(nullptr, std::memory_order_relaxed);
}

}  // namespace txray::tx
