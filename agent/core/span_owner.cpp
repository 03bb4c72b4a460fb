#include "core/span_owner.h"

#include <atomic>

#include "core/counters.h"
#include "core/hold.h"
#include "core/ids.h"
#include "core/transaction.h"

namespace txray::span_owner {
namespace {

enum : uint8_t { kFree = 0, kRequest = 1, kSpan = 2 };

// One slot of an open-addressing table (linear probing, deletion by backward shift), keyed by
// (kind, id): a request by its caller span P, a named span by S.
struct Entry {
  uint64_t key = 0;
  Transaction* t = nullptr;  // holds a reference; nullptr: a caller span shared by two requests
  uint64_t parent = 0;       // span entries: the request's caller span
  uint32_t live = 0;         // request entries: requests in flight with this caller span
  uint32_t spans = 0;        // request entries: span entries named and not taken
  uint8_t kind = kFree;
};

Entry g_slots[kSlots];
size_t g_used = 0;
std::atomic<bool> g_enabled{false};
std::atomic<uint32_t> g_generation{1};

HoldFlag g_lock;

struct Counts {
  std::atomic<uint64_t> requests{0}, ambiguous{0}, named{0}, unknown{0}, taken{0}, expired{0}, full{0};
} g_counts;

void count(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

// The table's lock (hold.h). Held for a few hash probes (a scan of the table only when a request ends
// with spans still named for it). Giving up is counted; the callers then leave the call unattributed, as
// without a shim — except request_ended(), which must not miss and waits as long as a connection does.
constexpr uint64_t kShortWaitNs = 10'000'000;

class Locked {
 public:
  explicit Locked(uint64_t max_wait_ns) : hold_(&g_lock, max_wait_ns) {
    if (!hold_) count(g_counts.full);
  }
  explicit operator bool() const { return bool(hold_); }

 private:
  Hold hold_;
};

size_t home(uint64_t key, uint8_t kind) {
  uint64_t h = (key ^ (uint64_t(kind) << 61)) * 0x9e3779b97f4a7c15ull;
  return size_t(h >> 52) & (kSlots - 1);  // 4096 slots: the top 12 bits
}
static_assert(kSlots == 4096, "home() takes 12 bits");

Entry* find(uint64_t key, uint8_t kind) {
  for (size_t i = home(key, kind), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
    Entry& e = g_slots[i];
    if (e.kind == kFree) return nullptr;
    if (e.kind == kind && e.key == key) return &e;
  }
  return nullptr;
}

Entry* insert(uint64_t key, uint8_t kind) {
  if (g_used >= kMaxEntries) return nullptr;
  for (size_t i = home(key, kind);; i = (i + 1) & (kSlots - 1)) {
    Entry& e = g_slots[i];
    if (e.kind == kFree) {
      e = Entry{};
      e.key = key;
      e.kind = kind;
      ++g_used;
      return &e;
    }
  }
}

// Removes e and shifts later entries of its probe run back (no tombstones).
void erase(Entry* e) {
  size_t hole = size_t(e - g_slots);
  g_slots[hole] = Entry{};
  --g_used;
  for (size_t i = (hole + 1) & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
    Entry& x = g_slots[i];
    if (x.kind == kFree) return;
    size_t h = home(x.key, x.kind);
    // x may move into the hole when its home is not in (hole, i] (cyclically).
    bool stays = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i);
    if (stays) continue;
    g_slots[hole] = x;
    x = Entry{};
    hole = i;
  }
}

// Drops a reference held by the table. Never the last one for a request still indexed (its owner's
// is dropped in tx::end, after request_ended); a request whose end was missed (the lock refused) may
// be handed to the sink from here, which only queues it.
void unref(Transaction* t) {
  if (t) tx::unref(t);
}

}  // namespace

void enable() { g_enabled.store(true, std::memory_order_relaxed); }
bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

bool request_began(Transaction* t) {
  if (!t || !t->parent_span_id || !enabled()) return false;
  // Recorded into from other threads from now on (rows of calls its handler made): its lock, and no
  // nesting of one thread's calls under another's. Set before the table makes it visible.
  t->mt = true;
  t->flat = true;
  Locked lock(kShortWaitNs);
  if (!lock) return false;
  if (Entry* e = find(t->parent_span_id, kRequest)) {
    // Another request in flight has the same caller span: from now on neither can be told apart.
    Transaction* was = e->t;
    e->t = nullptr;
    e->live += 1;
    count(g_counts.ambiguous);
    unref(was);
    return true;
  }
  Entry* e = insert(t->parent_span_id, kRequest);
  if (!e) {
    count(g_counts.full);
    return false;
  }
  t->refs.fetch_add(1, std::memory_order_acq_rel);
  e->t = t;
  e->live = 1;
  count(g_counts.requests);
  return true;
}

void request_ended(Transaction* t) {
  if (!t) return;
  // Must not be missed (the entry would hold the request back from the sink): the holder is another
  // thread for a few probes, so this waits longer than the others before it gives up.
  Locked lock(Hold::kDefaultWaitNs);
  if (!lock) return;
  uint64_t parent = t->parent_span_id;
  Entry* e = find(parent, kRequest);
  if (!e) return;
  if (e->spans > 0) {
    // Spans named for t whose calls were never written (a call that failed before it was sent): gone.
    for (size_t i = 0; i < kSlots;) {
      Entry& x = g_slots[i];
      if (x.kind == kSpan && x.t == t) {
        unref(x.t);
        count(g_counts.expired);
        erase(&x);  // the next entry may have moved here: look at slot i again
        continue;
      }
      ++i;
    }
    e = find(parent, kRequest);  // erase() may have moved it
    if (!e) return;
    uint32_t left = 0;
    for (size_t i = 0; i < kSlots; ++i) left += g_slots[i].kind == kSpan && g_slots[i].parent == parent;
    e->spans = left;
  }
  if (e->t == t) {
    e->t = nullptr;
    unref(t);
  }
  if (e->live > 0) e->live -= 1;
  // Shared caller spans stay refused while any of their requests is in flight.
  if (e->live == 0 && e->spans == 0) erase(e);
}

uint64_t name_span(uint64_t parent) {
  if (!parent || !enabled()) return 0;
  Locked lock(kShortWaitNs);
  if (!lock) return 0;
  Entry* r = find(parent, kRequest);
  if (!r || !r->t) {
    count(g_counts.unknown);
    return 0;
  }
  Transaction* t = r->t;
  uint64_t span = 0;
  for (int i = 0; i < 4 && !span; ++i) {
    span = ids::next();
    if (find(span, kSpan)) span = 0;
  }
  Entry* s = span ? insert(span, kSpan) : nullptr;
  if (!s) {
    count(g_counts.full);
    return 0;
  }
  t->refs.fetch_add(1, std::memory_order_acq_rel);
  s->t = t;
  s->parent = parent;
  r->spans += 1;
  count(g_counts.named);
  return span;
}

Transaction* take(uint64_t span) {
  if (!span || !enabled()) return nullptr;
  Locked lock(kShortWaitNs);
  if (!lock) return nullptr;
  Entry* s = find(span, kSpan);
  if (!s) return nullptr;
  Transaction* t = s->t;
  uint64_t parent = s->parent;
  erase(s);
  if (Entry* r = find(parent, kRequest)) {
    if (r->spans > 0) r->spans -= 1;
    if (r->live == 0 && r->spans == 0) erase(r);
  }
  count(g_counts.taken);
  return t;  // the entry's reference goes to the caller
}

void release(Transaction* t) { unref(t); }

bool span_context(uint64_t span, std::string* tracestate, std::string* baggage) {
  if (!span || !enabled()) return false;
  Locked lock(kShortWaitNs);
  if (!lock) return false;
  Entry* s = find(span, kSpan);
  if (!s || !s->t) return false;
  tracestate->assign(s->t->tracestate);  // set when the request began, never changed after
  baggage->assign(s->t->baggage);
  return true;
}

uint32_t generation() { return g_generation.load(std::memory_order_relaxed); }

void after_fork_child() {
  // The parent's requests are not this process's: forgotten without a release (never ended here).
  // Only when the parent had entries: touching the whole table (4,096 entries) cost every forked child
  // ~40 page faults (reliability.test_exit_cost), even in programs that never speak HTTP/2.
  if (g_used)
    for (size_t i = 0; i < kSlots; ++i)
      if (g_slots[i].kind != kFree) g_slots[i] = Entry{};
  g_used = 0;
  g_lock.reset_after_fork();  // a thread of the parent may have held it at fork time
  uint32_t g = g_generation.load(std::memory_order_relaxed) + 1;
  g_generation.store(g == 0 ? 1 : g, std::memory_order_relaxed);
}

Stats stats() {
  Stats s;
  s.requests = g_counts.requests.load(std::memory_order_relaxed);
  s.ambiguous = g_counts.ambiguous.load(std::memory_order_relaxed);
  s.named = g_counts.named.load(std::memory_order_relaxed);
  s.unknown = g_counts.unknown.load(std::memory_order_relaxed);
  s.taken = g_counts.taken.load(std::memory_order_relaxed);
  s.expired = g_counts.expired.load(std::memory_order_relaxed);
  s.full = g_counts.full.load(std::memory_order_relaxed);
  if (Locked lock(kShortWaitNs); lock) s.entries = g_used;
  return s;
}

}  // namespace txray::span_owner
