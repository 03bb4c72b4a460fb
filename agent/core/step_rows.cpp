#include "core/step_rows.h"

#include "cpu/clock.h"
#include "core/counters.h"
#include "core/transaction.h"

namespace txray::rows {
namespace {

constexpr size_t kMaxSummaries = 256;

// The CPU clock at wall time `now` (just read): process mode reads the process's; a thread's own is
// switch-checked where it can be (clock.h), and the transaction counts the system calls it did take.
uint64_t cpu_now(Transaction* t, uint64_t now) {
  if (t->shared) return clock::process_cpu_ns();
  bool syscall = false;
  uint64_t v = clock::thread_cpu_ns_at(now, &syscall);
  t->cpu_clock_syscalls += syscall;
  return v;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Fills a real row's time fields from the clocks and moves the "previous row" marks to it.
void stamp(Transaction* t, Step& s, uint64_t now) {
  uint64_t cpu = cpu_now(t, now);
  uint32_t tid = t->shared ? 0 : tx::this_tid();
  s.start_offset_ns = now - t->start_mono_ns;
  s.gap_ns = now - t->last_row_mono_ns;
  // A row on another thread than the previous one (a response written by another thread) cannot say how
  // much CPU was used in between: it gets 0, so the CPU_T sum stays equal to the transaction's CPU.
  s.cpu_ns = (tid == t->last_row_tid && cpu >= t->last_row_cpu_ns) ? cpu - t->last_row_cpu_ns : 0;
  t->cpu_ns += s.cpu_ns;
  t->last_row_mono_ns = now;
  t->last_row_cpu_ns = cpu;
  t->last_row_tid = tid;
  ++t->rows;
}

void summarize(Transaction* t, const Step& s) {
  uint64_t fp = s.fingerprint ? s.fingerprint : fnv1a(s.text);
  StepSummary* sum = nullptr;
  for (auto& x : t->summary)
    if (x.kind == s.kind && x.fingerprint == fp) sum = &x;
  if (!sum) {
    if (t->summary.size() >= kMaxSummaries) {
      // Bounded: anything beyond goes to one "(other)" bucket of its kind.
      fp = 0;
      for (auto& x : t->summary)
        if (x.kind == s.kind && x.fingerprint == 0) sum = &x;
    }
    if (!sum) {
      t->summary.emplace_back();
      sum = &t->summary.back();
      sum->kind = s.kind;
      sum->fingerprint = fp;
      sum->text = fp ? std::string(s.text.view()) : std::string("(other)");
    }
  }
  sum->count++;
  sum->elapsed_ns += s.elapsed_ns;
  if (s.rows > 0) sum->rows += s.rows;
  if (!s.error.empty()) sum->errors++;
  sum->bytes_read += s.bytes_read;
  sum->bytes_written += s.bytes_written;
  counters().steps_summarized.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void start(Transaction* t) {
  uint64_t now = clock::mono_ns();
  t->start_mono_ns = now;
  t->last_row_mono_ns = now;
  t->last_row_cpu_ns = cpu_now(t, now);
  t->last_row_tid = t->shared ? 0 : tx::this_tid();
  Step& s = t->steps.emplace_back();  // in place (a Step is ~200 bytes to move and destroy)
  s.kind = StepKind::START;
  s.seq = ++t->next_seq;
  s.start_mono_ns = now;
  ++t->rows;
}

void fold_tail(Transaction* t) {
  while (!t->steps.empty() && t->steps.back().folded && !t->steps.back().open) {
    summarize(t, t->steps.back());
    t->steps.pop_back();
  }
}

int32_t add(Transaction* t, StepKind kind, bool call) {
  fold_tail(t);
  uint64_t now = clock::mono_ns();
  Step& s = t->steps.emplace_back();  // built in place: a Step is ~200 bytes, not worth a temporary
  s.kind = kind;
  s.seq = ++t->next_seq;
  s.start_mono_ns = now;
  s.open = call;
  s.parent = -1;
  uint32_t me = 0;
  if (!t->flat) {
    me = tx::this_tid();
    for (int d = t->depth; d-- > 0;)  // the innermost open call of this thread (transaction.h: stack_tid)
      if (t->stack_tid[d] == me) {
        s.parent = t->stack[d];
        break;
      }
  }
  // One row is always kept for END. A folded step reads no CPU clock and moves no "previous row" mark.
  if (t->rows + 1 >= t->max_rows) s.folded = true;
  else stamp(t, s, now);
  int32_t index = int32_t(t->steps.size() - 1);
  if (call && !t->flat) {
    if (t->depth < Transaction::kMaxDepth) {
      t->stack[t->depth] = index;
      t->stack_tid[t->depth++] = me;
    } else {
      counters().internal_errors.fetch_add(1, std::memory_order_relaxed);  // too deep: no children
    }
  }
  return index;
}

int32_t add_unnested(Transaction* t, StepKind kind) {
  int32_t index = add(t, kind, false);
  t->steps[size_t(index)].open = true;  // not on the stack: close_at closes it alone, finish() at the END
  return index;
}

uint64_t close_at(Transaction* t, int32_t index) {
  uint64_t now = clock::mono_ns();
  auto close_one = [&](int32_t i) {
    Step& s = t->steps[size_t(i)];
    if (!s.open) return;
    s.open = false;
    s.elapsed_ns = now - s.start_mono_ns;
  };
  int at = -1;
  for (int d = 0; d < t->depth && at < 0; ++d)
    if (t->stack[d] == index) at = d;
  if (at >= 0) {
    // It and the calls its thread opened after it (innermost first); other threads' open calls stay.
    uint32_t owner = t->stack_tid[at];
    for (int d = t->depth; d-- > at;)
      if (t->stack_tid[d] == owner) close_one(t->stack[d]);
    int keep = at;
    for (int d = at + 1; d < t->depth; ++d)
      if (t->stack_tid[d] != owner) {
        t->stack[keep] = t->stack[d];
        t->stack_tid[keep++] = t->stack_tid[d];
      }
    t->depth = keep;
  } else {
    close_one(index);
  }
  // Read before folding: a step folded now is gone from the list, and its summary line got this number.
  uint64_t elapsed = t->steps[size_t(index)].elapsed_ns;
  fold_tail(t);
  return elapsed;
}

void finish(Transaction* t) {
  while (t->depth > 0) close_at(t, t->stack[t->depth - 1]);
  // Open calls not on the stack: every call of a flat transaction, unnested ones (add_unnested) of others.
  for (size_t i = t->steps.size(); i-- > 0;)
    if (i < t->steps.size() && t->steps[i].open) close_at(t, int32_t(i));
  fold_tail(t);
  uint64_t now = clock::mono_ns();
  Step& s = t->steps.emplace_back();
  s.kind = StepKind::END;
  s.seq = ++t->next_seq;
  s.start_mono_ns = now;
  stamp(t, s, now);
  t->elapsed_ns = now - t->start_mono_ns;
}

}  // namespace txray::rows
