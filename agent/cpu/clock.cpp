#include "cpu/clock.h"

#include <linux/perf_event.h>

#include <atomic>
#include <cerrno>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace txray::clock {
namespace {

uint64_t read(clockid_t id) {
  timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
uint64_t real_mono() { return read(CLOCK_MONOTONIC); }
uint64_t real_thread_cpu() { return read(CLOCK_THREAD_CPUTIME_ID); }
uint64_t real_process_cpu() { return read(CLOCK_PROCESS_CPUTIME_ID); }

Source g_src{real_mono, real_thread_cpu, real_process_cpu};

// -1 undecided, 0 off (configured off, or the kernel did not rewrite the page at a sched-in), 1 verified.
std::atomic<int> g_state{-1};
// TXRAY_CPU_CLOCK=syscall turns the page's task clock (cap_user_time) off too.
std::atomic<bool> g_user_time_allowed{true};

// One thread's anchor (see clock.h). Written by its own thread only; `anchored` is cleared first and set
// last, so that a signal handler recording a row in the middle of an update takes the system call.
struct Anchor {
  const perf_event_mmap_page* page = nullptr;
  uint32_t lock = 0;
  bool anchored = false;
  uint64_t cpu = 0;   // thread CPU time at the anchor
  uint64_t mono = 0;  // CLOCK_MONOTONIC read just after it
  uint64_t last = 0;  // the last value handed out: values never go back
  // cap_user_time: the page's task clock, re-based once onto the system call's value.
  bool user_time = false;
  bool ut_anchored = false;
  uint64_t ut_base = 0;  // thread CPU time (system call) at the pairing
  uint64_t ut_tc0 = 0;   // the page's task clock read right after it
};
thread_local Anchor t_anchor __attribute__((tls_model("initial-exec")));
thread_local bool t_forced __attribute__((tls_model("initial-exec"))) = false;

// The value handed out: never below the last one, so GAP and CPU_T sums stay exact.
uint64_t hand_out(Anchor& a, uint64_t v) {
  if (v < a.last) v = a.last;
  a.last = v;
  return v;
}

uint32_t page_lock(const perf_event_mmap_page* p) {
  return __atomic_load_n(&p->lock, __ATOMIC_ACQUIRE);
}

// Sleeps ~60 us (a real sched-out and sched-in) and says whether the page's sequence moved.
bool rewritten_at_sched_in(const perf_event_mmap_page* p) {
  int saved = errno;
  uint32_t before = page_lock(p);
  timespec ts{0, 1000};
  for (int i = 0; i < 3 && page_lock(p) == before; ++i) nanosleep(&ts, nullptr);  // a signal: try again
  bool moved = page_lock(p) != before;
  errno = saved;
  return moved;
}

}  // namespace

uint64_t mono_ns() { return g_src.mono(); }
uint64_t thread_cpu_ns() { return g_src.thread_cpu(); }
uint64_t process_cpu_ns() { return g_src.process_cpu(); }
uint64_t unix_ns() { return read(CLOCK_REALTIME); }

uint64_t user_time_delta(uint64_t cyc, uint16_t shift, uint32_t mult, uint64_t offset, bool short_,
                         uint64_t time_cycles, uint64_t time_mask) {
  if (short_) cyc = time_cycles + ((cyc - time_cycles) & time_mask);
  uint64_t quot = shift < 64 ? cyc >> shift : 0;
  uint64_t rem = shift < 64 ? cyc & ((uint64_t(1) << shift) - 1) : cyc;
  return offset + quot * mult + ((rem * mult) >> shift);
}

bool task_clock_from_page(const perf_event_mmap_page* p, uint64_t* ns) {
#if defined(__x86_64__)
  for (int tries = 0; tries < 4; ++tries) {
    uint32_t seq = page_lock(p);
    if (!p->cap_user_time) return false;
    uint64_t running = p->time_running;
    uint16_t shift = p->time_shift;
    uint32_t mult = p->time_mult;
    uint64_t offset = p->time_offset;
    bool short_ = p->cap_user_time_short;
    uint64_t cycles = p->time_cycles, mask = p->time_mask;
    uint64_t cyc = __rdtsc();
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (page_lock(p) != seq || (seq & 1)) continue;
    *ns = running + user_time_delta(cyc, shift, mult, offset, short_, cycles, mask);
    return true;
  }
#else
  (void)p;
  (void)ns;
#endif
  return false;
}

bool thread_uses_user_time() { return t_anchor.page && t_anchor.user_time; }

uint64_t thread_cpu_ns_at(uint64_t now, bool* syscall) {
  Anchor& a = t_anchor;
  if (!a.page || t_forced || g_src.thread_cpu != real_thread_cpu || g_src.mono != real_mono) {
    *syscall = g_src.thread_cpu == real_thread_cpu;
    return g_src.thread_cpu();
  }
  if (a.user_time) {
    uint64_t tc;
    if (a.ut_anchored && task_clock_from_page(a.page, &tc) && tc >= a.ut_tc0) {
      *syscall = false;
      return hand_out(a, a.ut_base + (tc - a.ut_tc0));
    }
    // The pairing (or the page would not give a value this time: the system call, re-paired).
    a.ut_anchored = false;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t cpu = hand_out(a, real_thread_cpu());
    if (task_clock_from_page(a.page, &tc)) {
      a.ut_base = cpu;
      a.ut_tc0 = tc;
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      a.ut_anchored = true;
    }
    *syscall = true;
    return cpu;
  }
  uint32_t seq = page_lock(a.page);
  if (a.anchored && seq == a.lock && now >= a.mono) {
    *syscall = false;
    return hand_out(a, a.cpu + (now - a.mono));
  }
  a.anchored = false;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  uint64_t cpu = hand_out(a, real_thread_cpu());
  a.mono = real_mono();
  a.lock = seq;  // read before the system call: a switch during it re-anchors at the next read
  a.cpu = cpu;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  a.anchored = true;
  *syscall = true;
  return cpu;
}

void configure_switch_checked(bool enabled) {
  if (!enabled) {
    g_state.store(0, std::memory_order_release);
    g_user_time_allowed.store(false, std::memory_order_release);
  }
}

int switch_checked_state() { return g_state.load(std::memory_order_acquire); }

void set_thread_switch_page(const void* page) {
  Anchor& a = t_anchor;
  a.anchored = false;
  if (!page) {
    a.page = nullptr;
    a.user_time = a.ut_anchored = false;
    return;
  }
  auto* p = static_cast<const perf_event_mmap_page*>(page);
  a.user_time = false;
  a.ut_anchored = false;
  // A page the kernel lets user space read time from needs no check of its sched-in rewrites.
  if (uint64_t tc; g_user_time_allowed.load(std::memory_order_acquire) && task_clock_from_page(p, &tc)) {
    a.user_time = true;
    a.page = p;
    return;
  }
  int state = g_state.load(std::memory_order_acquire);
  if (state == 0) return;
  if (state < 0) {
    // Each thread that finds it undecided checks for itself (only the first few ever do).
    bool ok = rewritten_at_sched_in(p);
    int expected = -1;
    g_state.compare_exchange_strong(expected, ok ? 1 : 0, std::memory_order_acq_rel);
    if (!ok) {
      g_state.store(0, std::memory_order_release);
      return;
    }
    if (g_state.load(std::memory_order_acquire) != 1) return;
  }
  a.page = p;
}

void force_syscall_on_this_thread(bool on) {
  t_forced = on;
  t_anchor.anchored = false;
  t_anchor.ut_anchored = false;  // paired again afterwards: the forced reads' values are handed out too
}

void forget_thread_page() {
  t_anchor.page = nullptr;
  t_anchor.anchored = false;
  t_anchor.user_time = t_anchor.ut_anchored = false;
}

void set_clocks_for_test(const Source& s) {
  g_src.mono = s.mono ? s.mono : real_mono;
  g_src.thread_cpu = s.thread_cpu ? s.thread_cpu : real_thread_cpu;
  g_src.process_cpu = s.process_cpu ? s.process_cpu : real_process_cpu;
}

}  // namespace txray::clock
