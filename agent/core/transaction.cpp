#include "core/transaction.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <type_traits>

#include "cpu/cpu_sampler.h"
#include "cpu/perf_sampler.h"

#include "cpu/clock.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/redact.h"
#include "core/ids.h"
#include "core/step_rows.h"
#include "core/mpsc_queue.h"  // a bounded lock-free ring (MPMC); pure data structure, no I/O

namespace txray::tx {
namespace {

// A thread's "current transaction" slot. A transaction points at its owner's slot (owner_slot) so that
// end(), on whatever thread it runs, can clear it. A slot in the thread's own TLS would go with the thread:
// a request whose thread called pthread_exit() and whose connection another thread closes later had
// end() write into an unmapped stack (a crash; tests/reliability/test_threads.py). So slots live in
// chunks that are never freed: a thread takes one when it first makes a transaction current and gives it
// back when it exits (a pthread key's destructor). A late end() on a slot reused meanwhile finds another
// value there (its transaction is alive, so no other one has its address) and leaves it alone.
struct OwnerSlot {
  std::atomic<Transaction*> cur{nullptr};
  std::atomic<uint32_t> next{0};  // free list: index + 1 of the next free slot (0: none)
};
constexpr uint32_t kSlotChunkBits = 6;
constexpr uint32_t kSlotChunk = 1u << kSlotChunkBits;
constexpr uint32_t kSlotChunks = 1024;  // 65,536 threads with a transaction at once
// The first chunk is static: a forked child taking its first slot allocates nothing.
OwnerSlot g_first_slots[kSlotChunk];
std::atomic<OwnerSlot*> g_slot_chunks[kSlotChunks] = {g_first_slots};
std::atomic<uint32_t> g_slots_made{0};
std::atomic<uint64_t> g_free_slots{0};  // (tag << 32) | (index + 1): a lock-free stack, the tag against ABA

thread_local OwnerSlot* t_slot __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local uint32_t t_slot_index __attribute__((tls_model("initial-exec"))) = 0;
thread_local uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<Transaction*> g_process_tx{nullptr};
std::atomic<Sink> g_sink{nullptr};
std::atomic<void (*)()> g_thread_exit_hook{nullptr};
pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;
bool g_exit_key_ok = false;

OwnerSlot* slot_at(uint32_t index) {
  OwnerSlot* chunk = g_slot_chunks[index >> kSlotChunkBits].load(std::memory_order_acquire);
  return chunk ? &chunk[index & (kSlotChunk - 1)] : nullptr;
}

void release_slot(uint32_t index) {
  OwnerSlot* s = slot_at(index);
  s->cur.store(nullptr, std::memory_order_release);
  uint64_t head = g_free_slots.load(std::memory_order_acquire);
  uint64_t next;
  do {
    s->next.store(uint32_t(head), std::memory_order_relaxed);
    next = (((head >> 32) + 1) << 32) | (index + 1);
  } while (!g_free_slots.compare_exchange_weak(head, next, std::memory_order_acq_rel));
}

// A free slot (from the free list, else a new one); false when none can be had.
bool acquire_slot(uint32_t* index) {
  uint64_t head = g_free_slots.load(std::memory_order_acquire);
  while (uint32_t(head) != 0) {
    uint32_t i = uint32_t(head) - 1;
    uint64_t next = (((head >> 32) + 1) << 32) | slot_at(i)->next.load(std::memory_order_relaxed);
    if (g_free_slots.compare_exchange_weak(head, next, std::memory_order_acq_rel)) {
      *index = i;
      return true;
    }
  }
  uint32_t i = g_slots_made.load(std::memory_order_relaxed);
  do {
    if (i >= kSlotChunk * kSlotChunks) return false;
  } while (!g_slots_made.compare_exchange_weak(i, i + 1, std::memory_order_relaxed));
  std::atomic<OwnerSlot*>& chunk = g_slot_chunks[i >> kSlotChunkBits];
  if (!chunk.load(std::memory_order_acquire)) {
    auto* fresh = new (std::nothrow) OwnerSlot[kSlotChunk];
    if (!fresh) return false;  // that index is lost; later ones may still find memory
    OwnerSlot* expected = nullptr;
    if (!chunk.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) delete[] fresh;
  }
  *index = i;
  return true;
}

// Runs when a thread that had a slot exits (pthread_exit or returning from its start function).
void on_thread_exit(void*) {
  if (!t_slot) return;
  if (auto hook = g_thread_exit_hook.load(std::memory_order_acquire)) hook();
  t_slot = nullptr;
  release_slot(t_slot_index);
}

void make_exit_key() { g_exit_key_ok = pthread_key_create(&g_exit_key, on_thread_exit) == 0; }
// Made at load time: a forked child whose first transaction is its first ever does not pay for it.
[[maybe_unused]] const bool g_exit_key_made = (pthread_once(&g_exit_key_once, make_exit_key), true);

// The calling thread's slot, taken on first use; nullptr when none could be had.
OwnerSlot* own_slot() {
  if (__builtin_expect(t_slot != nullptr, 1)) return t_slot;
  pthread_once(&g_exit_key_once, make_exit_key);
  uint32_t i;
  if (!g_exit_key_ok || !acquire_slot(&i)) {
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  t_slot = slot_at(i);
  t_slot_index = i;
  pthread_setspecific(g_exit_key, t_slot);  // non-null: the destructor runs at the thread's exit
  return t_slot;
}
// Finished transactions made new again, for begin() (recycle()). Bounded: at most this many wait. Made
// on first use (the agent's constructor may begin a transaction before this file's statics are made)
// and never destroyed: threads of the program, and the exit flush, may still end and send transactions
// while static destructors run.
constexpr size_t kPoolCapacity = 1024;
MpscQueue<Transaction>& pool() {
  static MpscQueue<Transaction>* const p = new MpscQueue<Transaction>(kPoolCapacity);
  return *p;
}
// What recycling keeps: buffers this small are worth keeping; a transaction that grew past them gives
// its memory back (a pool of 1,000-row step lists would hold on to megabytes).
constexpr size_t kKeepSteps = 16;
constexpr size_t kKeepAttrs = 8;
constexpr size_t kKeepText = 256;

Transaction* fresh_transaction() {
  if (Transaction* t = pool().pop()) return t;
  return new Transaction;
}

}  // namespace

// Every member back to its default, in place (destroying and constructing the whole
// Transaction cost the agent thread ~500 instructions per request). The static_assert below stops the
// build when the struct changes size: a new member must be reset here too.
void reset(Transaction* t) {
  static_assert(sizeof(Transaction) == 896 || sizeof(void*) != 8, "Transaction changed: reset() must reset its new members");
  auto keep = [](auto& v, size_t cap) {  // emptied; its capacity kept only when small
    if (v.capacity() <= cap) v.clear();
    else std::remove_reference_t<decltype(v)>().swap(v);
  };
  t->txid = 0;
  std::memset(t->trace_id, 0, sizeof t->trace_id);
  t->parent_span_id = 0;
  t->trace_flags = -1;
  keep(t->tracestate, kKeepText);
  keep(t->baggage, kKeepText);
  keep(t->name, kKeepText);
  keep(t->kind, kKeepText);
  t->start_unix_ns = t->elapsed_ns = t->cpu_ns = 0;
  t->totals = Totals{};
  keep(t->client_addr, kKeepText);
  t->status = 0;
  keep(t->error, kKeepText);
  t->bytes_read = t->bytes_written = 0;
  t->tid = 0;
  keep(t->steps, kKeepSteps);
  keep(t->summary, 0);
  keep(t->attrs, kKeepAttrs);
  t->agent_cost_ns = t->agent_thread_ns = 0;
  t->io_calls = 0;
  t->shared = t->mt = t->flat = t->finished = false;
  t->req_fd = -1;
  t->refs.store(1, std::memory_order_relaxed);
  // mu: unlocked (nobody holds a finished transaction's lock)
  t->start_mono_ns = t->last_row_mono_ns = t->last_row_cpu_ns = 0;
  t->last_row_tid = 0;
  t->rows = 0;
  t->max_rows = 1000;
  t->next_seq = 0;
  t->depth = 0;  // stack/stack_tid: meaningful only below depth
  t->owner_slot = nullptr;
  t->cpu.buf = nullptr;
  keep(t->cpu.samples, 0);
  t->cpu.samples_dropped = 0;
  keep(t->cpu_profile.rows, 0);
  keep(t->cpu_profile.stacks, 0);
  t->cpu.ring = nullptr;
  t->cpu.ring_gen = 0;
  t->cpu.end_mono_ns = 0;
  t->cpu.contended = false;
  t->cpu_clock_syscalls = 0;
}

void recycle(Transaction* t) {
  if (!t) return;
  cpu::perf::release(&t->cpu);  // a transaction dropped before the agent thread gave it its samples
  reset(t);
  if (!pool().push(t)) delete t;
}

uint32_t this_tid() {
  if (t_tid == 0) t_tid = uint32_t(syscall(SYS_gettid));
  return t_tid;
}
void reset_tid_after_fork() { t_tid = 0; }

Transaction* begin(std::string_view name, std::string_view kind, bool shared) {
  Transaction* t = fresh_transaction();
  ids::tx_ids(&t->txid, t->trace_id);
  t->name.assign(name.substr(0, 1024));
  t->kind.assign(kind);
  t->shared = shared;
  t->tid = this_tid();
  t->max_rows = config().max_steps < 3 ? 3 : config().max_steps;
  t->start_unix_ns = clock::unix_ns();
  t->steps.reserve(4);  // START, END and a couple of steps without reallocating
  // Raw values were asked for (core/redact.h): every profile says so, so nobody reads one unaware.
  if (__builtin_expect(redact::policy().marked, 0)) t->attrs.push_back({"values", "raw"});
  if (kind != "unattributed") cpu::before_start(&t->cpu);
  rows::start(t);
  if (kind != "unattributed") cpu::on_begin(&t->cpu);
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
    cpu::on_end(&t->cpu, t->last_row_mono_ns);
  }
  // Fewer locked operations per request: on its owner thread the slot is cleared with a
  // plain store (only the owner stores transactions there; another thread's end() only ever swaps its
  // own transaction out, with a compare-exchange, which a value other than its own makes fail); the
  // process transaction is swapped out only when it is this one (an http-mode request never is).
  if (auto* slot = t->owner_slot) {
    if (t_slot && slot == &t_slot->cur) {
      if (slot->load(std::memory_order_relaxed) == t) slot->store(nullptr, std::memory_order_relaxed);
    } else {
      Transaction* expected = t;
      slot->compare_exchange_strong(expected, nullptr);
    }
  }
  if (g_process_tx.load(std::memory_order_relaxed) == t) {
    Transaction* expected = t;
    g_process_tx.compare_exchange_strong(expected, nullptr);
  }
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
  to->trace_flags = from->trace_flags;
  to->tracestate = from->tracestate;
  to->baggage = from->baggage;
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
  to->cpu_clock_syscalls = from->cpu_clock_syscalls;
  to->depth = 0;
  // `from` starts again; its step serial numbers go on, so refs to the old rows are stale (txid too).
  from->txid = ids::next();
  ids::trace_id(from->trace_id);
  from->start_unix_ns = clock::unix_ns();
  from->totals = Totals{};
  from->bytes_read = from->bytes_written = 0;
  from->rows = 0;  // its steps, summaries, attributes and error went to `to` (empty ones came back)
  from->cpu_ns = 0;
  from->cpu_clock_syscalls = 0;
  from->depth = 0;
  rows::start(from);
}

void make_current(Transaction* t) {
  OwnerSlot* s = t ? own_slot() : t_slot;
  if (!s) return;  // no slot to be had (counted): t is not this thread's current transaction
  s->cur.store(t, std::memory_order_relaxed);
  if (t) t->owner_slot = &s->cur;
}

void release_current(Transaction* t) {
  if (auto* slot = t ? t->owner_slot : nullptr) {
    Transaction* expected = t;
    slot->compare_exchange_strong(expected, nullptr);
  }
}

Transaction* thread_current() {
  OwnerSlot* s = t_slot;
  return s ? s->cur.load(std::memory_order_relaxed) : nullptr;
}

void set_thread_exit_hook(void (*hook)()) { g_thread_exit_hook.store(hook, std::memory_order_release); }

void set_process_transaction(Transaction* t) { g_process_tx.store(t, std::memory_order_release); }
Transaction* process_transaction() { return g_process_tx.load(std::memory_order_acquire); }

void set_sink(Sink s) { g_sink.store(s, std::memory_order_release); }

void forget_current_after_fork() {
  // The slot stays this thread's (its key value came through the fork); the other threads' slots were
  // copied in use and stay so (a few abandoned slots per fork, never reused).
  if (t_slot) t_slot->cur.store(nullptr, std::memory_order_relaxed);
  g_process_tx.store(nullptr, std::memory_order_relaxed);
}

}  // namespace txray::tx
