#include "core/unattributed.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>

#include "cpu/clock.h"
#include "core/config.h"

namespace txray::unattr {
namespace {

std::atomic<Transaction*> g_container{nullptr};
constexpr uint64_t kMaxWaitForOpenNs = 10'000'000'000ull;
constexpr uint64_t kMaxRows = 100'000;

}  // namespace

Transaction* container() {
  Transaction* c = g_container.load(std::memory_order_acquire);
  if (__builtin_expect(c != nullptr, 1)) return c;
  if (config().mode != Mode::http) return nullptr;
  Transaction* fresh = tx::begin("unattributed steps", "unattributed");
  fresh->mt = true;
  fresh->flat = true;
  // Sent every second, but only when no call in it is open, which under load may take a while: room
  // for many rows before anything is folded (rotate_if_full sends it earlier when it can).
  fresh->max_rows = uint32_t(std::min<uint64_t>(uint64_t(fresh->max_rows) * 16, kMaxRows));
  Transaction* expected = nullptr;
  if (!g_container.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;
    return expected;
  }
  return fresh;
}

bool is_container(const Transaction* t) { return t && t == g_container.load(std::memory_order_relaxed); }

void rotate(bool final) {
  Transaction* c = g_container.load(std::memory_order_acquire);
  if (!c) return;
  Transaction* out = nullptr;
  {
    // Never waits: at exit the lock may be held by the very thread that exits from a signal handler.
    std::unique_lock<std::mutex> lock(c->mu, std::try_to_lock);
    if (!lock.owns_lock()) return;
    if (c->steps.size() <= 1 && c->summary.empty()) return;  // START only
    bool open = false;
    for (const Step& s : c->steps) open |= s.open;
    if (open && !final && clock::mono_ns() - c->start_mono_ns < kMaxWaitForOpenNs) return;
    out = new (std::nothrow) Transaction;
    if (!out) return;
    tx::take_over(c, out);
  }
  tx::end(out, 0, "");
}

void rotate_if_full() {
  Transaction* c = g_container.load(std::memory_order_acquire);
  if (!c || c->rows + 2 < c->max_rows) return;  // unlocked peek: a stale answer only delays by one step
  Transaction* out = nullptr;
  {
    std::unique_lock<std::mutex> lock(c->mu, std::try_to_lock);
    if (!lock.owns_lock() || c->rows + 2 < c->max_rows) return;
    for (const Step& s : c->steps)
      if (s.open) return;  // a call still open: it folds, as in any transaction
    out = new (std::nothrow) Transaction;
    if (!out) return;
    tx::take_over(c, out);
  }
  tx::end(out, 0, "");
}

void after_fork_child() { g_container.store(nullptr, std::memory_order_relaxed); }

}  // namespace txray::unattr
