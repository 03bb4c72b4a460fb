// The recorder API (recorder.h) over the row mechanics (step_rows.h).
#include "core/recorder.h"

#include <cerrno>
#include <new>

#include "core/attribution.h"
#include "cpu/clock.h"
#include "core/counters.h"
#include "core/ids.h"
#include "core/span_owner.h"
#include "cpu/stack_capture.h"
#include "core/step_rows.h"
#include "core/transaction.h"
#include "core/unattributed.h"

namespace txray::rec {
namespace {

// Set while this thread is inside the recorder: a signal handler that makes a hooked call in the middle
// of a recorder call must not touch the same transaction (PITFALLS 7); its step is dropped and counted.
thread_local bool t_in_recorder __attribute__((tls_model("initial-exec"))) = false;

constexpr size_t kMaxText = 4096;
constexpr size_t kMaxAttrs = 32;

// Entered recorder section: keeps errno, refuses re-entry, holds the transaction's lock in process mode.
class Section {
 public:
  explicit Section(Transaction* t) : t_(t), errno_(errno) {
    if (!t_) return;
    if (t_in_recorder) {
      counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    t_in_recorder = true;
    locked_ = tx::locked(t_);
    if (locked_) t_->mu.lock();
    if (t_->finished) {
      release();
      return;
    }
    ok_ = true;
  }
  ~Section() {
    if (ok_) release();
    errno = errno_;
  }
  explicit operator bool() const { return ok_; }

 private:
  void release() {
    if (locked_) t_->mu.unlock();
    t_in_recorder = false;
    ok_ = false;
  }
  Transaction* t_;
  int errno_;
  bool ok_ = false;
  bool locked_ = false;
};

// The step a ref points to, or nullptr when the ref is empty or stale. Call inside a Section.
Step* lookup(const StepRef& s) {
  Transaction* t = s.tx;
  if (t->txid != s.txid || s.index < 0 || size_t(s.index) >= t->steps.size()) return nullptr;
  Step& step = t->steps[size_t(s.index)];
  return step.seq == s.seq ? &step : nullptr;
}

// Runs fn(step) on a live step of the calling thread's current transaction.
template <typename Fn>
void with_step(const StepRef& s, Fn fn) {
  if (!usable(s)) return;
  Section sec(s.tx);
  if (!sec) return;
  if (Step* step = lookup(s)) fn(*step);
}

// Rows fetched for a step that was folded: they go to its summary line.
void add_summary_rows(Transaction* t, StepKind kind, uint64_t fingerprint, int64_t rows) {
  for (auto& x : t->summary)
    if (x.kind == kind && x.fingerprint == fingerprint) {
      x.rows += rows;
      return;
    }
}

void share_text(Step& st, const SharedText& text) {
  if (text.size() <= kMaxText) st.text = text;
  else st.text.assign(text.view().substr(0, kMaxText));
}

// Takes the calling thread's stack into a step that failed or was slow: once per step, inside the
// recorder section (a signal handler's hooked call cannot re-enter here while libunwind walks).
__attribute__((noinline)) void take_stack(Step& st) {
  // A step past the step limit becomes a summary line when closed: no row to hold a stack.
  if (st.stack || st.folded || !stacks::settings().on) return;
  uintptr_t ips[stacks::kMaxFrames];
  int n = stacks::capture(ips, stacks::kMaxFrames);
  if (n <= 0) return stacks::note_missed();
  auto* raw = new (std::nothrow) stacks::RawStack;
  if (!raw) return stacks::note_missed();
  raw->n = uint32_t(n);
  for (int i = 0; i < n; ++i) raw->ip[i] = ips[i];
  st.stack.reset(raw);
}

bool is_slow(uint64_t elapsed) {
  uint64_t slow = stacks::settings().slow_ns;
  return slow && elapsed >= slow && stacks::settings().on;
}

StepRef make_ref(Transaction* t, int32_t index) {
  const Step& s = t->steps[size_t(index)];
  return StepRef{t, t->txid, s.seq, index, t->req_fd, s.start_mono_ns};
}

}  // namespace

Transaction* current() { return attr::current_or_container(); }
Transaction* current_request() { return attr::current(); }
bool in_recorder() { return t_in_recorder; }

bool usable(const StepRef& s) {
  if (!s.tx) return false;
  if (s.held) return s.held == span_owner::generation();  // its lock is taken (the transaction is mt)
  if (unattr::is_container(s.tx) || s.tx == attr::current()) return true;
  return s.req_fd >= 0 && attr::resolve(ReqRef{s.req_fd, s.txid}) == s.tx;
}

StepRef open(Transaction* tx, StepKind kind) {
  if (unattr::is_container(tx)) unattr::rotate_if_full();
  Section sec(tx);
  if (!sec) return {};
  return make_ref(tx, rows::add(tx, kind, true));
}

StepRef open_unnested(Transaction* tx, StepKind kind) {
  if (unattr::is_container(tx)) unattr::rotate_if_full();
  Section sec(tx);
  if (!sec) return {};
  return make_ref(tx, rows::add_unnested(tx, kind));
}

StepRef open_unnested(Transaction* tx, StepKind kind, const SharedText& text, uint64_t fingerprint,
                      std::string_view attr_key, std::string_view attr_value) {
  if (unattr::is_container(tx)) unattr::rotate_if_full();
  Section sec(tx);
  if (!sec) return {};
  int32_t i = rows::add_unnested(tx, kind);
  Step& st = tx->steps[size_t(i)];
  share_text(st, text);
  st.fingerprint = fingerprint;
  if (!attr_key.empty()) {
    Attr& a = st.attrs.emplace_back();  // in place: no temporary strings to move and destroy
    a.key.assign(attr_key.substr(0, 128));
    a.value.assign(attr_value.substr(0, 1024));
  }
  return make_ref(tx, i);
}

StepRef add(Transaction* tx, StepKind kind, std::string_view text) {
  if (unattr::is_container(tx)) unattr::rotate_if_full();
  Section sec(tx);
  if (!sec) return {};
  int32_t i = rows::add(tx, kind, false);
  tx->steps[size_t(i)].text.assign(text.substr(0, kMaxText));
  return make_ref(tx, i);
}

uint64_t close(StepRef& s) {
  if (!usable(s)) return 0;
  Section sec(s.tx);
  if (!sec) return 0;
  if (!lookup(s)) return 0;
  uint64_t elapsed = rows::close_at(s.tx, s.index);
  if (is_slow(elapsed))
    if (Step* st = lookup(s)) take_stack(*st);  // still a row (not folded past the step limit)
  return elapsed;
}

uint64_t close_sql(StepRef& s, const SqlRow& row) {
  if (!usable(s)) return 0;
  Section sec(s.tx);
  if (!sec) return 0;
  Step* st = lookup(s);
  if (!st) return 0;
  if (row.text) share_text(*st, *row.text);
  st->fingerprint = row.fingerprint;
  if (row.binds) st->binds = *row.binds;
  st->rows = row.rows;
  st->changes = row.changes;
  st->bytes_read += row.bytes_read;
  st->bytes_written += row.bytes_written;
  uint64_t elapsed = rows::close_at(s.tx, s.index);  // may fold the step: `st` is not used after this
  if (is_slow(elapsed))
    if (Step* again = lookup(s)) take_stack(*again);
  s.tx->totals.sql_ns += elapsed;
  s.tx->totals.sql_count += 1;
  return elapsed;
}

void end_fetch(const StepRef& s, uint64_t fingerprint, int64_t more_rows, uint64_t fetch_ns) {
  if (!usable(s)) return;
  Section sec(s.tx);
  if (!sec) return;
  s.tx->totals.fetch_ns += fetch_ns;
  if (Step* step = lookup(s)) {
    if (more_rows > 0) step->rows = (step->rows < 0 ? 0 : step->rows) + more_rows;
    step->fetch_ns = fetch_ns;
  } else if (more_rows > 0) {
    add_summary_rows(s.tx, StepKind::SQL, fingerprint, more_rows);
  }
}

uint64_t elapsed(const StepRef& s) {
  uint64_t e = 0;
  with_step(s, [&](Step& st) { e = st.open ? 0 : st.elapsed_ns; });
  return e;
}

void add_rows(const StepRef& s, StepKind kind, uint64_t fingerprint, int64_t rows) {
  if (rows <= 0 || !usable(s)) return;
  Section sec(s.tx);
  if (!sec) return;
  if (Step* step = lookup(s)) {
    step->rows = (step->rows < 0 ? 0 : step->rows) + rows;
    return;
  }
  add_summary_rows(s.tx, kind, fingerprint, rows);
}

void set_text(const StepRef& s, std::string_view text) {
  with_step(s, [&](Step& st) { st.text.assign(text.substr(0, kMaxText)); });
}
void set_text(const StepRef& s, const SharedText& text) {
  with_step(s, [&](Step& st) { share_text(st, text); });
}
void set_error(const StepRef& s, std::string_view error) {
  with_step(s, [&](Step& st) {
    st.error.assign(error.substr(0, 1024));
    if (!error.empty()) take_stack(st);
  });
}
void add_attr(const StepRef& s, std::string_view key, std::string_view value) {
  with_step(s, [&](Step& st) {
    if (st.attrs.size() < kMaxAttrs)
      st.attrs.push_back(Attr{std::string(key.substr(0, 128)), std::string(value.substr(0, 1024))});
  });
}
void add_bytes(const StepRef& s, uint64_t read, uint64_t written) {
  with_step(s, [&](Step& st) {
    st.bytes_read += read;
    st.bytes_written += written;
  });
}
void set_rows(const StepRef& s, int64_t rows) {
  with_step(s, [&](Step& st) { st.rows = rows; });
}
void set_changes(const StepRef& s, int64_t changes) {
  with_step(s, [&](Step& st) { st.changes = changes; });
}
void set_fetch_ns(const StepRef& s, uint64_t fetch_ns) {
  with_step(s, [&](Step& st) { st.fetch_ns = fetch_ns; });
}
void set_fingerprint(const StepRef& s, uint64_t fp) {
  with_step(s, [&](Step& st) { st.fingerprint = fp; });
}
void set_status(const StepRef& s, int32_t status) {
  with_step(s, [&](Step& st) {
    st.status = status;
    if (st.kind == StepKind::HTTP_CALL && status >= 500) take_stack(st);  // a failed call
  });
}
void set_id(const StepRef& s, uint64_t id) {
  with_step(s, [&](Step& st) { st.id = id; });
}
void set_elapsed(const StepRef& s, uint64_t elapsed_ns) {
  with_step(s, [&](Step& st) { st.elapsed_ns = elapsed_ns; });
}

void add_totals(Transaction* tx, const Totals& a) {
  Section sec(tx);
  if (!sec) return;
  tx->totals.sql_ns += a.sql_ns;
  tx->totals.fetch_ns += a.fetch_ns;
  tx->totals.call_ns += a.call_ns;
  tx->totals.sql_count += a.sql_count;
  tx->totals.call_count += a.call_count;
}

void mark_failed(Transaction* tx, std::string_view error) {
  Section sec(tx);
  if (!sec) return;
  if (tx->error.empty()) tx->error.assign(error.empty() ? std::string_view("failed") : error.substr(0, 1024));
}

void add_tx_attr(Transaction* tx, std::string_view key, std::string_view value) {
  Section sec(tx);
  if (!sec) return;
  if (tx->attrs.size() < kMaxAttrs)
    tx->attrs.push_back(Attr{std::string(key.substr(0, 128)), std::string(value.substr(0, 1024))});
}

bool trace_context(Transaction* tx, uint8_t trace_id[16], uint64_t* span_id) {
  if (!tx) return false;
  for (int i = 0; i < 16; ++i) trace_id[i] = tx->trace_id[i];
  if (span_id) *span_id = tx->txid;
  return true;
}

void set_parent(Transaction* tx, const uint8_t trace_id[16], uint64_t parent_span_id) {
  Section sec(tx);
  if (!sec) return;
  for (int i = 0; i < 16; ++i) tx->trace_id[i] = trace_id[i];
  tx->parent_span_id = parent_span_id;
  // Someone else's trace, whose flags were not given: sampled, and not "random" (the agent cannot
  // vouch for ids it did not make).
  tx->trace_flags = 0x01;
}

uint64_t new_id() { return ids::next(); }
uint64_t now_ns() { return clock::mono_ns(); }

}  // namespace txray::rec
