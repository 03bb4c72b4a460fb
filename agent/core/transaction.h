// The transaction and step model: what one traced request (or process run) recorded, row by row.
//
// Rows are appended in time order. Each row's GAP is the wall time since the previous row and its CPU_T
// the CPU time since the previous row, both taken by the recorder when the row is created, so over a
// transaction sum(GAP) == elapsed_ns and sum(CPU_T) == cpu_ns by construction. Past the step limit a
// step is kept only until it is closed and then folded into a StepSummary (it never became a row, so
// its GAP/CPU simply end up in the next real row).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/cpu_sampler.h"
#include "core/recorder.h"
#include "core/shared_text.h"
#include "cpu/stack_capture.h"

namespace txray {

struct Attr {
  std::string key;
  std::string value;
};

struct Step {
  StepKind kind = StepKind::MESSAGE;
  int32_t parent = -1;
  uint32_t seq = 0;
  bool open = false;    // a call step not closed yet
  bool folded = false;  // past the step limit: becomes part of a summary when closed
  uint64_t start_mono_ns = 0;
  uint64_t start_offset_ns = 0;
  uint64_t gap_ns = 0;
  uint64_t cpu_ns = 0;
  uint64_t elapsed_ns = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  SharedText text;   // shared with whoever made it (a prepared statement's masked text): no copy per row
  std::string error;
  SharedText binds;  // a SQL row's bind parameters; on the wire the attribute "binds", before `attrs`
  std::vector<Attr> attrs;
  uint64_t id = 0;
  int64_t rows = -1;
  uint64_t fetch_ns = 0;
  uint64_t fingerprint = 0;
  int32_t status = 0;
  int64_t changes = -1;
  // The calling thread's stack when the step failed or was slow (stack_capture.h), else null: side
  // storage, allocated only when a stack is taken.
  stacks::StackBox stack;
};

struct StepSummary {
  StepKind kind = StepKind::MESSAGE;
  uint64_t fingerprint = 0;
  std::string text;
  uint64_t count = 0;
  uint64_t elapsed_ns = 0;
  int64_t rows = 0;
  uint64_t errors = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
};

struct Transaction {
  // What goes on the wire.
  uint64_t txid = 0;
  uint8_t trace_id[16] = {};
  uint64_t parent_span_id = 0;
  // W3C trace flags received with the caller's traceparent (sampled, random), -1 when the agent started
  // the trace (protocols/tracecontext/context.h decides its flags then).
  int16_t trace_flags = -1;
  // The caller's tracestate (combined and checked) and baggage, sent on with every outbound call the
  // agent injects into; empty when none.
  std::string tracestate;
  std::string baggage;
  std::string name;
  std::string kind;  // "http", "api", "process"
  uint64_t start_unix_ns = 0;
  uint64_t elapsed_ns = 0;
  uint64_t cpu_ns = 0;
  Totals totals;
  std::string client_addr;
  int32_t status = 0;
  std::string error;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint32_t tid = 0;
  std::vector<Step> steps;
  std::vector<StepSummary> summary;
  std::vector<Attr> attrs;
  // The agent's own cost in this transaction (transport/self_cost.h): set on the agent thread just
  // before encoding, never on a host thread.
  uint64_t agent_cost_ns = 0;    // estimate, host threads + agent thread
  uint64_t agent_thread_ns = 0;  // of which the agent thread's share

  // Recording state.
  uint32_t io_calls = 0;  // followed reads/writes of its connection after the one that began it (self_cost)
  bool shared = false;  // process mode: steps from every thread, serialized by `mu`, process CPU
  // Used from more than one thread (captured for a hand-off, or the unattributed container): serialized
  // by `mu`, thread CPU (a row on another thread than the previous one gets CPU_T 0). Set on the owner
  // thread before the transaction is handed to another one, never cleared.
  bool mt = false;
  // No nesting: a call step is never the parent of steps opened while it is open, and closing it closes
  // only itself. For transactions of event-loop threads and the unattributed container, where calls
  // of one transaction overlap without nesting (two concurrent fetches of one request).
  bool flat = false;
  bool finished = false;
  int32_t req_fd = -1;  // the inbound connection of an HTTP request (attribution.h: ReqRef), else -1
  // Holders: the one who ends it, plus one per capture (attribution.h). The last to let go hands it to
  // the sink.
  std::atomic<int> refs{1};
  std::mutex mu;
  uint64_t start_mono_ns = 0;
  uint64_t last_row_mono_ns = 0;
  uint64_t last_row_cpu_ns = 0;
  uint32_t last_row_tid = 0;  // CPU_T counts only when a row is on the same thread as the previous one
  uint32_t rows = 0;          // real rows so far
  uint32_t max_rows = 1000;
  uint32_t next_seq = 0;
  static constexpr int kMaxDepth = 32;
  int32_t stack[kMaxDepth];  // open call steps (indexes into steps), innermost last
  // The thread that opened each of them: nesting is per thread. In a transaction that several threads
  // record into at once (process mode, a hand-off to a pool), a step's parent is the innermost open
  // call of its own thread, and closing a call closes only the calls its thread opened after it (not
  // another thread's statement still running, which would then be folded before its own close and
  // lost from the totals: 8 threads x 200 statements counted 1,311).
  uint32_t stack_tid[kMaxDepth];
  int depth = 0;
  std::atomic<Transaction*>* owner_slot = nullptr;  // the owning thread's "current" slot

  // CPU samples (cpu/cpu_sampler.h: Window): what the samplers keep while the transaction is open and
  // its samples once it ended; the agent thread turns them into `cpu_profile` (transport/cpu_profile.h)
  // before encoding.
  cpu::Window cpu;
  cpu::Profile cpu_profile;
  // Thread CPU clock reads that took the system call (clock.h: the others were switch-checked): the
  // agent's cost estimate prices the two kinds apart (transport/self_cost.h).
  uint16_t cpu_clock_syscalls = 0;
};

namespace tx {

// Starts a transaction with a START row at now. `shared` = process mode (every thread records into
// it, CPU is the process's). Does not make it current.
Transaction* begin(std::string_view name, std::string_view kind, bool shared = false);

// Appends the END row at now, closes steps still open, folds what is pending, records status/error
// (error non-empty = failed), clears it as its owner thread's current transaction and hands it to the
// sink, which owns it from then on. Safe to call once; later calls do nothing.
void end(Transaction* t, int32_t status, std::string_view error);

// The calling thread's current transaction (what rec::current() returns in http mode). The slot it is
// kept in outlives the thread (transaction.cpp: OwnerSlot), so end() may run on any thread at any time.
void make_current(Transaction* t);
Transaction* thread_current();
// t stops being its owner thread's current transaction (if it still is), from any thread: an HTTP/1.1
// request upgraded to HTTP/2 becomes stream 1 of a multiplexed connection (http_conn.cpp).
void release_current(Transaction* t);

// Runs on a thread that had a current transaction when it exits (pthread_exit() or the return of its
// start function; not at process exit), before its slot is given back: the C API ends there what
// txray_begin() started and nobody ended.
void set_thread_exit_hook(void (*hook)());
// Process mode: the one transaction every thread records into (nullptr when none).
void set_process_transaction(Transaction* t);
Transaction* process_transaction();

// Where finished transactions go (the transport's queue; tests collect them). Without a sink they are
// deleted.
using Sink = void (*)(Transaction*);
void set_sink(Sink s);

// Drops one reference (see Transaction::refs): the last one hands the transaction to the sink. end()
// drops the owner's.
void unref(Transaction* t);

// Gives a finished transaction back once it was sent (or dropped), instead of deleting it: it is made
// new again in place (every member back to its default, transaction.cpp: reset()), keeping only the capacity of its step and attribute
// lists and of its name and client address, and kept in a bounded pool that begin() takes from, so a
// transaction with few rows costs the host thread no heap allocation and the agent thread no free.
// Pool full: deleted. Any thread.
void recycle(Transaction* t);

// True when recording into t must hold its lock (process mode or used from several threads).
inline bool locked(const Transaction* t) { return t->shared || t->mt; }

// Moves everything recorded so far (rows, summaries, totals, attributes) out of `from` into `to`, a
// fresh transaction, and starts `from` again with a new id and a new START row at now. For the
// unattributed container, which lives for the whole process (callers hold from->mu).
void take_over(Transaction* from, Transaction* to);

// Forget this thread's current transaction without touching it (forked child).
void forget_current_after_fork();

// Gettid, cached per thread (reset in a forked child).
uint32_t this_tid();
void reset_tid_after_fork();

}  // namespace tx
}  // namespace txray
