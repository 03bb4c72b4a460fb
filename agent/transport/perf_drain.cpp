#include "transport/perf_drain.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <vector>

#include "cpu/clock.h"
#include "core/config.h"
#include "cpu/cpu_sampler.h"
#include "cpu/perf_sampler.h"
#include "cpu/perf_unwind.h"
#include "core/transaction.h"

namespace txray::cpu::perfdrain {
namespace {

// The agent's side of one ring: samples unwound and waiting for their transaction, oldest first.
struct Side {
  uint32_t generation = 0;
  std::deque<RawSample> pending;
};

std::mutex* g_mu = new std::mutex;  // the agent thread, or the exiting thread doing its work at exit
// One per ring slot, made at the slot's first drain: a forked child that never samples allocates none
// (256 empty deques, each with its map and first node, were ~70 fresh pages in every child).
Side** g_side = new Side*[perf::kMaxRings]();
std::vector<uint8_t>* g_scratch = new std::vector<uint8_t>;  // a record that wraps around the ring's end
std::atomic<uint64_t> g_lost{0};
bool g_unwinder = false;
bool g_tried = false;

size_t pending_cap() { return size_t(config().cpu_samples_max) + 64; }

void keep(Side& side, const RawSample& s) {
  if (side.pending.size() >= pending_cap()) {
    side.pending.pop_front();
    note_dropped(1);
  }
  side.pending.push_back(s);
}

// One PERF_RECORD_SAMPLE (IP | TID | TIME | REGS_USER | STACK_USER, in that order).
void on_sample(Side& side, const uint8_t* p, const uint8_t* end, uint64_t discard_before) {
  auto u64 = [&](uint64_t* v) {
    if (p + 8 > end) return false;
    std::memcpy(v, p, 8);
    p += 8;
    return true;
  };
  uint64_t ip = 0, pid_tid = 0, time = 0, abi = 0;
  if (!u64(&ip) || !u64(&pid_tid) || !u64(&time) || !u64(&abi)) return;
  if (time < discard_before) return;  // in no transaction: not worth unwinding
  RawSample s;
  s.mono_ns = time;
  uint64_t regs[perfu::kRegs];
  bool have_regs = abi != PERF_SAMPLE_REGS_ABI_NONE;
  if (have_regs)
    for (auto& r : regs)
      if (!u64(&r)) return;
  uint64_t size = 0;
  if (!u64(&size)) return;
  const uint8_t* stack = p;
  uint64_t dyn = 0;
  if (size > 0) {
    if (size > uint64_t(end - p)) return;
    p += size;
    if (!u64(&dyn) || dyn > size) dyn = 0;
  }
  if (have_regs && g_unwinder) {
    s.frames = uint32_t(perfu::unwind(regs, stack, dyn, s.ip, kMaxFrames));
  } else {
    s.ip[0] = uintptr_t(ip);
    s.frames = 1;
  }
  keep(side, s);
}

// Everything the ring holds now, into side.pending. `discard_before`: samples older are nobody's.
void drain(perf::Ring& r, Side& side, uint64_t discard_before) {
  auto* meta = static_cast<perf_event_mmap_page*>(r.base);
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  if (head == tail) return;
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  uint64_t size = meta->data_size ? meta->data_size : perf::data_bytes();
  auto* data = static_cast<uint8_t*>(r.base) + (meta->data_offset ? meta->data_offset : page);
  while (tail < head) {
    uint64_t off = tail % size;
    perf_event_header h;
    std::memcpy(&h, data + off, sizeof h);  // 8-byte aligned: a header never wraps
    if (h.size < sizeof h || tail + h.size > head) break;
    const uint8_t* rec = data + off;
    if (off + h.size > size) {  // wraps around the end: made whole in the scratch buffer
      g_scratch->resize(h.size);
      std::memcpy(g_scratch->data(), data + off, size - off);
      std::memcpy(g_scratch->data() + (size - off), data, h.size - (size - off));
      rec = g_scratch->data();
    }
    if (h.type == PERF_RECORD_SAMPLE) {
      on_sample(side, rec + sizeof h, rec + h.size, discard_before);
    } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
      uint64_t lost = 0;
      std::memcpy(&lost, rec + sizeof h + 8, 8);
      g_lost.fetch_add(lost, std::memory_order_relaxed);
    }
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

// nullptr when out of memory (the ring is drained at a later call).
Side* side_of(perf::Ring& r) {
  if (!g_side) return nullptr;
  Side*& slot = g_side[&r - perf::ring(0)];
  if (!slot) slot = new (std::nothrow) Side;
  if (!slot) return nullptr;
  Side& side = *slot;
  uint32_t gen = r.generation.load(std::memory_order_acquire);
  if (side.generation != gen) {
    side.pending.clear();
    side.generation = gen;
  }
  return &side;
}

void prepare() {
  if (!g_tried) {
    g_tried = true;
    g_unwinder = perfu::load();
  }
  if (g_unwinder) perfu::refresh_modules();
}

// Drains r; when no transaction holds it, what is older than the clock read first is nobody's (a
// transaction that begins later takes its reference before reading its start time: perf_sampler.cpp).
void drain_and_prune(perf::Ring& r, Side& side) {
  uint64_t now = clock::mono_ns();
  bool idle = r.refs.load(std::memory_order_seq_cst) == 0;
  drain(r, side, idle ? now : 0);
  if (idle)
    while (!side.pending.empty() && side.pending.front().mono_ns < now) side.pending.pop_front();
}

}  // namespace

bool poll() {
  if (!perf::active()) return false;
  std::lock_guard<std::mutex> lock(*g_mu);
  size_t n = perf::ring_count();
  bool prepared = false, in_flight = false;
  for (size_t i = 0; i < n; ++i) {
    perf::Ring& r = *perf::ring(i);
    int st = r.state.load(std::memory_order_acquire);
    if ((st != perf::Ring::kLive && st != perf::Ring::kExited) || !r.base) continue;
    in_flight = in_flight || r.refs.load(std::memory_order_relaxed) > 0;
    if (!prepared) prepare(), prepared = true;
    Side* sp = side_of(r);
    if (!sp) continue;
    Side& side = *sp;
    drain_and_prune(r, side);
    if (st == perf::Ring::kExited && r.refs.load(std::memory_order_acquire) == 0) {
      // The thread is gone and no transaction of it waits: the event ends with its mapping.
      munmap(r.base, r.bytes);
      r.base = nullptr;
      side.pending.clear();
      r.state.store(perf::Ring::kFree, std::memory_order_release);
    }
  }
  return in_flight;
}

void settle(Transaction& t) {
  auto* r = static_cast<perf::Ring*>(t.cpu.ring);
  if (!r) return;
  {
    std::lock_guard<std::mutex> lock(*g_mu);
    Side* sp = nullptr;  // none when out of memory: the transaction goes without samples
    if (r->base && r->generation.load(std::memory_order_acquire) == t.cpu.ring_gen && (prepare(), sp = side_of(*r))) {
      Side& side = *sp;
      drain(*r, side, 0);
      uint64_t lo = t.start_mono_ns, hi = t.cpu.end_mono_ns;
      bool only_one = r->refs.load(std::memory_order_acquire) == 1;  // no older transaction still to settle
      uint32_t cap = config().cpu_samples_max, dropped = 0;
      // The samples left for later transactions kept in place, in their order (a std::deque
      // made and freed per transaction, its map and first node allocated even when it stayed empty,
      // was ~500 instructions a request with the perf sampler on).
      std::deque<RawSample>& q = side.pending;
      size_t kept = 0;
      for (size_t i = 0, n = q.size(); i < n; ++i) {
        const RawSample& s = q[i];
        if (s.mono_ns >= lo && s.mono_ns <= hi) {
          if (!t.cpu.contended && t.cpu.samples.size() < cap) {
            try {
              t.cpu.samples.push_back(s);
              continue;
            } catch (...) {
            }
          }
          ++dropped;
        } else if (s.mono_ns > hi || !only_one) {
          if (kept != i) q[kept] = s;
          ++kept;
        }
      }
      q.erase(q.begin() + std::ptrdiff_t(kept), q.end());
      t.cpu.samples_dropped += dropped;
      note_dropped(dropped);
    }
  }
  perf::release(&t.cpu);
}

uint64_t lost_total() { return g_lost.load(std::memory_order_relaxed); }

void after_fork_child() {
  // The parent's agent thread may have held the lock or been inside a list at fork: all abandoned.
  g_mu = new (std::nothrow) std::mutex;
  g_side = new (std::nothrow) Side*[perf::kMaxRings]();
  g_scratch = new (std::nothrow) std::vector<uint8_t>;
}

}  // namespace txray::cpu::perfdrain
