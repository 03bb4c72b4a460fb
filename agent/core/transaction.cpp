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
    if (locked(t)) lock.lock();
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
  unref(t);
}

void unref(Transaction* t) {
  if (t->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (Sink s = g_sink.load(std::memory_order_acquire)) s(t);
  else delete t;
}

void take_over(Transaction* from, Transaction* to) {  // `to`: freshly made, empty
  to->txid = from->txid;
  for (int i = 0; i < 16; ++i) to->trace_id[i] = from->trace_id[i];
  to->name = from->name;
  to->kind = from->kind;
  to->start_unix_ns = from->start_unix_ns;
  to->totals = from->totals;
  to->bytes_read = from->bytes_read;
  to->bytes_written = from->bytes_written;
  to->tid = from->tid;
  to->steps.swap(from->steps);
  to->summary.swap(from->summary);
  to->attrs.swap(from->attrs);
  to->error.swap(from->error);
  to->mt = true;  // END is stamped on the calling thread
  to->flat = from->flat;
  to->max_rows = from->max_rows;
  to->start_mono_ns = from->start_mono_ns;
  to->last_row_mono_ns = from->last_row_mono_ns;
  to->last_row_cpu_ns = from->last_row_cpu_ns;
  to->last_row_tid = from->last_row_tid;
  to->rows = from->rows;
  to->next_seq = from->next_seq;
  to->cpu_ns = from->cpu_ns;
  to->depth = 0;
  // `from` starts again; its step serial numbers go on, so refs to the old rows are stale (txid too).
  from->txid = ids::next();
  ids::trace_id(from->trace_id);
  from->start_unix_ns = clock::unix_ns();
  from->totals = Totals{};
  from->bytes_read = from->bytes_written = 0;
  from->rows = 0;  // its steps, summaries, attributes and error went to `to` (empty ones came back)
  from->cpu_ns = 0;
  from->depth = 0;
  rows::start(from);
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
