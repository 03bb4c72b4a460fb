#include "cpu/stack_capture.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>

#include "core/config.h"

namespace txray::stacks {
namespace {

// libunwind's entry points (libunwind8: unw_backtrace, unw_set_caching_policy on the local address
// space). UNW_CACHE_PER_THREAD = 2 in <libunwind-common.h>.
using BacktraceFn = int (*)(void**, int);
using CachingFn = int (*)(void*, int);
constexpr int kUnwCachePerThread = 2;

// How many leading frames (agent + libunwind) may be dropped at most before the host's first frame.
constexpr int kMaxSkipped = 24;

Settings g_settings;
std::atomic<int> g_state{0};  // 0 not tried, 1 loading, 2 ready, 3 unusable
BacktraceFn g_backtrace = nullptr;
// Set while this thread is inside libunwind (in_unwind()): the pipe libunwind opens for its memory
// checks then goes to the top of the table, marked as the agent's (hooks/pipe_hooks.cpp).
thread_local bool t_in_unwind __attribute__((tls_model("initial-exec"))) = false;
struct InUnwind {
  bool prev = t_in_unwind;
  InUnwind() { t_in_unwind = true; }
  ~InUnwind() { t_in_unwind = prev; }
};
std::atomic<uint64_t> g_taken{0};
std::atomic<uint64_t> g_missed{0};

// Address ranges whose frames are dropped from the top of a stack: the agent's own shared object (when
// it is one: in a unit test the core is part of the test program, whose frames are kept) and libunwind.
struct Range {
  uintptr_t lo = 0, hi = 0;
  bool has(uintptr_t ip) const { return ip >= lo && ip < hi; }
};
Range g_agent, g_unwind;

struct Find {
  uintptr_t addr;
  Range* out;
  bool main_program;
};

int find_range(dl_phdr_info* info, size_t, void* arg) {
  auto* f = static_cast<Find*>(arg);
  uintptr_t lo = ~uintptr_t(0), hi = 0;
  bool inside = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph.p_vaddr, b = a + ph.p_memsz;
    if (a < lo) lo = a;
    if (b > hi) hi = b;
    if (f->addr >= a && f->addr < b) inside = true;
  }
  if (!inside) return 0;
  f->main_program = !info->dlpi_name || !*info->dlpi_name;
  *f->out = Range{lo, hi};
  return 1;
}

void range_of(uintptr_t addr, Range* out, bool keep_main_program) {
  Range r;
  Find f{addr, &r, false};
  dl_iterate_phdr(find_range, &f);
  if (f.main_program && keep_main_program) return;
  *out = r;
}

bool load() {
  // RTLD_LOCAL: nothing of libunwind (its _Unwind_* above all) becomes visible to the host.
  InUnwind in;  // for all of it: libunwind may initialise itself as it is loaded
  void* h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  auto bt = reinterpret_cast<BacktraceFn>(dlsym(h, "unw_backtrace"));
  if (!bt) return false;
  // Per-thread caches: the default global cache takes a lock with every signal blocked (two
  // sigprocmask calls) around each lookup.
  auto policy = reinterpret_cast<CachingFn>(dlsym(h, "_ULx86_64_set_caching_policy"));
  void* local_as = dlsym(h, "_ULx86_64_local_addr_space");
  if (policy && local_as) policy(*static_cast<void**>(local_as), kUnwCachePerThread);
  range_of(reinterpret_cast<uintptr_t>(&capture), &g_agent, true);
  range_of(reinterpret_cast<uintptr_t>(bt), &g_unwind, false);
  g_backtrace = bt;
  // Unwind once now, in this ordinary context: libunwind initialises itself at its first unwind and
  // opens a pipe then (its memory validation reads and writes through it, for as long as the process
  // lives). Opened here, that pipe is moved out of the program's way (top of the table, marked: the
  // program's close and dup2 sweeps cannot reach it) instead of taking the program's lowest free numbers
  // at some later moment, inside a signal handler.
  void* probe[4];
  bt(probe, 4);
  return true;
}

}  // namespace

void configure(const Settings& s) { g_settings = s; }
const Settings& settings() { return g_settings; }

bool preload() {
  int st = g_state.load(std::memory_order_acquire);
  if (st == 2) return true;
  if (st != 0) return false;  // unusable, or another thread is loading it right now
  if (!g_state.compare_exchange_strong(st, 1)) return g_state.load(std::memory_order_acquire) == 2;
  bool ok = load();
  g_state.store(ok ? 2 : 3, std::memory_order_release);
  if (!ok) debug_log("libunwind.so.8 could not be loaded (package libunwind8): no stacks of failed and slow steps");
  return ok;
}

__attribute__((noinline)) int capture(uintptr_t* ips, int max, bool may_load) {
  if (max > kMaxFrames) max = kMaxFrames;
  if (max <= 0) return 0;
  if (g_state.load(std::memory_order_acquire) != 2 && !(may_load && preload())) return 0;
  void* buf[kMaxFrames + kMaxSkipped];
  int n;
  {
    InUnwind in;
    n = g_backtrace(buf, kMaxFrames + kMaxSkipped);
  }
  int first = 0;
  while (first < n && first < kMaxSkipped) {
    auto ip = reinterpret_cast<uintptr_t>(buf[first]);
    if (!g_agent.has(ip) && !g_unwind.has(ip)) break;
    ++first;
  }
  // In a unit test the core is part of the test program (no agent range): capture()'s own frame comes
  // right after libunwind's.
  if (!g_agent.hi && first < n) ++first;
  int out = 0;
  for (int i = first; i < n && out < max; ++i) ips[out++] = reinterpret_cast<uintptr_t>(buf[i]);
  if (out) g_taken.fetch_add(1, std::memory_order_relaxed);
  return out;
}

bool in_unwind() { return t_in_unwind; }
UnwindScope::UnwindScope() : prev_(t_in_unwind) { t_in_unwind = true; }
UnwindScope::~UnwindScope() { t_in_unwind = prev_; }

uint64_t taken() { return g_taken.load(std::memory_order_relaxed); }
uint64_t missed() { return g_missed.load(std::memory_order_relaxed); }
void note_missed() { g_missed.fetch_add(1, std::memory_order_relaxed); }

}  // namespace txray::stacks
