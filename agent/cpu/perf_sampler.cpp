#include "cpu/perf_sampler.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "cpu/clock.h"
#include "core/config.h"
#include "cpu/cpu_sampler.h"
#include "hooks/hook.h"

namespace txray::cpu::perf {
namespace {

Ring g_rings[kMaxRings];
std::atomic<size_t> g_count{0};  // slots ever used (high-water mark)
std::atomic<bool> g_active{false};
std::atomic<bool> g_ever_opened{false};  // a ring was had once in this process
std::atomic<uint64_t> g_unsampled{0};
std::mutex g_err_mu;
char g_err[96] = "";
uint64_t g_period_ns = 10'000'000;
uint32_t g_stack = 16384;
size_t g_data = 0;  // bytes of the data area (a power of two pages)
constexpr uint32_t kMaxStrikes = 4;

// x86-64 perf register numbers (asm/perf_regs.h): AX BX CX DX SI DI BP SP IP, then R8..R15. The segment
// registers are refused for 64-bit processes, FLAGS is of no use to an unwinder.
constexpr uint64_t kRegsMask = 0x1ffull | (0xffull << 16);

thread_local Ring* t_ring __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_never __attribute__((tls_model("initial-exec"))) = false;

pthread_key_t g_key;
bool g_key_ok = false;
std::atomic<void (*)()> g_starter{nullptr};

perf_event_attr make_attr() {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period = g_period_ns;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.exclude_idle = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;  // clock::mono_ns(), the clock of row times: samples are placed by time
  a.sample_regs_user = kRegsMask;
  a.sample_stack_user = g_stack;
  return a;
}

void note_error(const char* what, int err) {
  std::lock_guard<std::mutex> lock(g_err_mu);
  std::snprintf(g_err, sizeof g_err, "%s: %s", what, std::strerror(err));
}

// The calling thread's event and ring; the descriptor is closed before returning (see the header).
// errno kept. nullptr: refused (the reason noted).
void* open_ring(size_t* bytes_out) {
  int saved = errno;
  perf_event_attr a = make_attr();
  int fd = int(syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) {
    note_error("perf_event_open", errno);
    errno = saved;
    return nullptr;
  }
  size_t bytes = size_t(sysconf(_SC_PAGESIZE)) + g_data;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) note_error("mmap of the perf ring", errno);
  close(fd);  // the mapping keeps the event: nothing of the agent's stays in the program's table
  errno = saved;
  if (p == MAP_FAILED) return nullptr;
  *bytes_out = bytes;
  return p;
}

void on_thread_exit(void* p) {
  auto* r = static_cast<Ring*>(p);
  if (!r || r != t_ring) return;
  clock::set_thread_switch_page(nullptr);  // before the agent thread may unmap it
  t_ring = nullptr;
  r->state.store(Ring::kExited, std::memory_order_release);  // the agent thread unmaps it when unused
}

Ring* own_ring() {
  if (t_ring) return t_ring;
  if (t_never) return nullptr;
  t_never = true;  // one attempt per thread, whatever happens
  Ring* r = nullptr;
  size_t n = g_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < kMaxRings && !r; ++i) {
    int expected = Ring::kFree;
    if (g_rings[i].state.load(std::memory_order_relaxed) == Ring::kFree &&
        g_rings[i].state.compare_exchange_strong(expected, Ring::kOpening, std::memory_order_acq_rel))
      r = &g_rings[i];
  }
  if (!r) {
    g_unsampled.fetch_add(1, std::memory_order_relaxed);
    note_error("perf rings", ENOSPC);
    return nullptr;
  }
  size_t index = size_t(r - g_rings);
  size_t bytes = 0;
  void* base = open_ring(&bytes);
  if (!base) {
    r->state.store(Ring::kFree, std::memory_order_release);
    if (!g_ever_opened.load(std::memory_order_acquire)) {
      // The first thread's open refused: auto falls back to the signal sampler (this transaction's
      // timer is armed by cpu::on_begin right after); an explicit perf counts the thread.
      std::string why = last_open_error();
      cpu::perf_refused_at_first_open(why.c_str());
      if (!active()) return nullptr;
    }
    g_unsampled.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  g_ever_opened.store(true, std::memory_order_release);
  r->base = base;
  r->bytes = bytes;
  r->tid = uint32_t(syscall(SYS_gettid));  // once per thread
  r->strikes = 0;
  r->refs.store(0, std::memory_order_relaxed);
  r->owner.store(nullptr, std::memory_order_relaxed);
  r->contended.store(false, std::memory_order_relaxed);
  r->generation.fetch_add(1, std::memory_order_relaxed);
  while (n <= index && !g_count.compare_exchange_weak(n, index + 1, std::memory_order_acq_rel)) {
  }
  r->state.store(Ring::kLive, std::memory_order_release);
  t_ring = r;
  t_never = false;
  if (g_key_ok) pthread_setspecific(g_key, r);
  clock::set_thread_switch_page(base);  // the ring's first page: perf_event_mmap_page
  if (auto start = g_starter.load(std::memory_order_acquire); start && hooks::g_enabled.load(std::memory_order_acquire))
    start();
  return r;
}

}  // namespace

bool probe(const Config& c, std::string* why) {
  g_period_ns = uint64_t(c.cpu_sample_ms) * 1'000'000ull;
  g_stack = c.cpu_stack_kb * 1024;
  // At least 24 samples between two drains of the agent thread: it drains every 5 ms, but on a loaded
  // machine it waits for a CPU like any thread (256 KiB at 8 KiB stacks: 30 samples, 300 ms of CPU).
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t want = size_t(g_stack + 512) * 24;
  g_data = page;
  while (g_data < want) g_data *= 2;
  // Whether perf_event_open may be called at all, without making an event: an attribute too short to
  // be one. A seccomp filter refuses the call before the kernel looks at it (its errno: EPERM, EACCES),
  // perf_event_paranoid 3+ refuses it first thing (EACCES), a kernel without perf events says ENOSYS;
  // otherwise the kernel answers E2BIG. A real event is not made here on purpose: the first task-bound
  // event of a system makes the kernel wait for an RCU grace period (10-30 ms of wall time here), which
  // every program loading the agent would pay; the first transaction's thread pays it instead, once.
  perf_event_attr a{};
  a.size = 1;
  int saved = errno;
  long r = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);  // flags 0: the real opens pass FD_CLOEXEC
  int err = errno;
  if (r >= 0) close(int(r));  // never expected
  errno = saved;
  if (r < 0 && err != E2BIG && err != EINVAL) {
    note_error("perf_event_open", err);
    std::lock_guard<std::mutex> lock(g_err_mu);
    *why = g_err;
    g_err[0] = 0;
    return false;
  }
  return true;
}

void start(const Config& c) {
  clock::configure_switch_checked(c.fast_cpu_clock);
  g_key_ok = pthread_key_create(&g_key, on_thread_exit) == 0;
  g_active.store(true, std::memory_order_release);
}

bool active() { return g_active.load(std::memory_order_relaxed); }
void stop() { g_active.store(false, std::memory_order_release); }

void before_start(Window* w) {
  Ring* r = own_ring();
  if (!r) return;
  if (r->owner.load(std::memory_order_relaxed)) {
    // Two transactions in flight on one thread (an event loop): samples cannot say whose they are.
    r->contended.store(true, std::memory_order_relaxed);
    return;
  }
  if (r->strikes >= kMaxStrikes) return;
  // The reference first, then the start time (rows::start, after this): the agent thread, having read
  // the clock and then seen no reference, knows every later transaction starts after that time.
  r->refs.fetch_add(1, std::memory_order_seq_cst);
  r->contended.store(false, std::memory_order_relaxed);
  r->owner.store(w, std::memory_order_release);
  w->ring = r;
  w->ring_gen = r->generation.load(std::memory_order_relaxed);
}

void on_end(Window* w, uint64_t end_mono_ns) {
  auto* r = static_cast<Ring*>(w->ring);
  if (!r) return;
  w->end_mono_ns = end_mono_ns;  // END's time: the window is [start, END]
  Window* expected = w;
  r->owner.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  w->contended = r->contended.exchange(false, std::memory_order_acq_rel);
  if (w->contended && r == t_ring) ++r->strikes;
}

void release(Window* w) {
  auto* r = static_cast<Ring*>(w->ring);
  if (!r) return;
  w->ring = nullptr;
  if (r->generation.load(std::memory_order_acquire) == w->ring_gen && r->refs.load(std::memory_order_relaxed) > 0)
    r->refs.fetch_sub(1, std::memory_order_acq_rel);
}

void set_starter(void (*start)()) { g_starter.store(start, std::memory_order_release); }

Ring* ring(size_t i) { return &g_rings[i]; }
size_t ring_count() { return g_count.load(std::memory_order_acquire); }
size_t data_bytes() { return g_data; }
uint32_t stack_bytes() { return g_stack; }
uint64_t threads_unsampled() { return g_unsampled.load(std::memory_order_relaxed); }
std::string last_open_error() {
  std::lock_guard<std::mutex> lock(g_err_mu);
  return g_err;
}

void after_fork_child() {
  // Not mapped here (VM_DONTCOPY): forgotten, never unmapped. The child's threads open their own.
  // Only the slots ever used: writing all 256 would copy their pages in every forked child.
  size_t used = g_count.load(std::memory_order_relaxed);
  for (size_t i = 0; i < used && i < kMaxRings; ++i) {
    Ring& r = g_rings[i];
    r.base = nullptr;
    r.refs.store(0, std::memory_order_relaxed);
    r.owner.store(nullptr, std::memory_order_relaxed);
    r.state.store(Ring::kFree, std::memory_order_relaxed);
  }
  g_count.store(0, std::memory_order_release);
  g_ever_opened.store(false, std::memory_order_relaxed);
  t_ring = nullptr;
  t_never = false;
  clock::forget_thread_page();
  if (g_key_ok) pthread_setspecific(g_key, nullptr);
  new (&g_err_mu) std::mutex;  // the parent's agent thread may have held it at fork
}

}  // namespace txray::cpu::perf
