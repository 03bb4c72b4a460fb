#include "cpu/cpu_sampler.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>  // types and constants only: the functions come from the dlopen()ed library
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "cpu/clock_page.h"
#include "core/config.h"
#include "cpu/seccomp_guard.h"
#include "cpu/perf_sampler.h"
#include "cpu/perf_unwind.h"
#include "cpu/stack_capture.h"

namespace txray::cpu {
namespace {

// A thread's sample buffer. The handler (on this thread only) writes slot n and then publishes n + 1;
// end() (on any thread) clears `owner` first and then copies the published slots, so a handler that
// was already past its check writes a slot nobody reads. Held by the thread (until it exits) and by
// the transaction being sampled: the last one to let go unmaps it.
struct ThreadBuf {
  std::atomic<int> refs{1};
  std::atomic<Window*> owner{nullptr};  // the transaction being sampled, nullptr: none
  std::atomic<uint32_t> n{0};                // samples published
  std::atomic<uint32_t> over{0};             // samples past the cap
  std::atomic<bool> contended{false};        // another transaction began on the thread meanwhile
  std::atomic<bool> thread_alive{true};
  uint32_t idle = 0;                         // samples in a row outside a transaction (kept armed)
  uint32_t strikes = 0;                      // contended transactions: after a few, never sample the thread
  bool has_timer = false;
  bool armed = false;
  timer_t timer{};
  uint32_t tid = 0;
  uint32_t cap = 0;
  timespec remaining{};                      // the timer's time left at the last disarm (phase kept)
  size_t bytes = 0;
  size_t slot = 0;                           // in g_timers
  RawSample s[1];                            // cap of them (mmap'd: untouched pages cost nothing)
};

constexpr uint32_t kMaxStrikes = 4;
constexpr uint32_t kMaxIdleSamples = 10;  // kept armed: stopped after this many samples outside a transaction

std::atomic<int> g_signal{0};        // 0: not sampling
std::atomic<bool> g_stopped{false};  // the program took the signal
std::atomic<uint64_t> g_dropped{0};
std::atomic<uint64_t> g_taken{0};
uint64_t g_period_ns = 10'000'000;
uint32_t g_cap = 256;
bool g_keep_armed = false;
char g_why_off[96] = "not started";
char g_perf_refused[112] = "";  // auto: why the perf sampler was not taken (said in the status)
bool g_auto = false;            // TXRAY_CPU_SAMPLER=auto chose perf (a refused first open falls back)

// Every thread's timer, so that all of them can be stopped at once when the program takes the signal
// (host_takes_signal). A thread that finds no free slot does not sample.
constexpr size_t kTimerSlots = 4096;
std::atomic<uintptr_t> g_timers[kTimerSlots];  // timer id + 1 (ids start at 0); 0 = free
std::atomic<size_t> g_timers_used{0};          // 1 + the highest slot ever taken (walks stop there)
bool take_timer_slot(timer_t t, size_t* index) {
  for (size_t i = 0; i < kTimerSlots; ++i) {
    uintptr_t zero = 0;
    if (g_timers[i].load(std::memory_order_relaxed) == 0 &&
        g_timers[i].compare_exchange_strong(zero, reinterpret_cast<uintptr_t>(t) + 1, std::memory_order_acq_rel)) {
      *index = i;
      size_t used = g_timers_used.load(std::memory_order_relaxed);
      while (used <= i && !g_timers_used.compare_exchange_weak(used, i + 1, std::memory_order_acq_rel)) {
      }
      return true;
    }
  }
  return false;
}

// libunwind's local unwinder, from the copy stack_capture.h loaded RTLD_LOCAL (never linked: see there).
// The walk starts from the signal's own context (unw_init_local2 with UNW_INIT_SIGNAL_FRAME), so the
// first address is the interrupted instruction and no frame of the handler or the kernel's trampoline
// is taken.
using InitLocal2Fn = int (*)(unw_cursor_t*, unw_context_t*, int);
using GetRegFn = int (*)(unw_cursor_t*, unw_regnum_t, unw_word_t*);
using StepFn = int (*)(unw_cursor_t*);
InitLocal2Fn g_init_local2 = nullptr;
GetRegFn g_get_reg = nullptr;
StepFn g_step = nullptr;

bool load_unwinder() {
  if (!stacks::preload()) return false;
  void* h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return false;
  g_init_local2 = reinterpret_cast<InitLocal2Fn>(dlsym(h, "_ULx86_64_init_local2"));
  g_get_reg = reinterpret_cast<GetRegFn>(dlsym(h, "_ULx86_64_get_reg"));
  g_step = reinterpret_cast<StepFn>(dlsym(h, "_ULx86_64_step"));
  return g_init_local2 && g_get_reg && g_step;
}

thread_local ThreadBuf* t_buf __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_never __attribute__((tls_model("initial-exec"))) = false;

pthread_key_t g_key;
bool g_key_ok = false;

void release(ThreadBuf* b) {
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) munmap(b, b->bytes);
}

void disarm(ThreadBuf* b) {
  if (!b->armed) return;
  itimerspec zero{};
  itimerspec old{};
  if (timer_settime(b->timer, 0, &zero, &old) == 0) b->remaining = old.it_value;
  b->armed = false;
}

void on_thread_exit(void* p) {
  auto* b = static_cast<ThreadBuf*>(p);
  if (!b || b != t_buf) return;
  t_buf = nullptr;
  b->thread_alive.store(false, std::memory_order_release);
  if (b->has_timer) {
    g_timers[b->slot].store(0, std::memory_order_release);
    timer_delete(b->timer);
  }
  b->has_timer = b->armed = false;
  release(b);
}

void handler(int, siginfo_t* si, void* uc) {
  if (si->si_code != SI_TIMER) return;  // sent by someone else (kill/sigqueue): not a sample
  int saved = errno;
  ThreadBuf* b = t_buf;
  if (b) {
    if (!b->owner.load(std::memory_order_acquire)) {
      // Outside a transaction (or its transaction ended on another thread): stop the timer, at once or
      // after a few such samples when kept armed (timer_settime is async-signal-safe).
      if (!g_keep_armed || ++b->idle >= kMaxIdleSamples) disarm(b);
    } else {
      uint32_t i = b->n.load(std::memory_order_relaxed);
      if (i >= b->cap) {
        b->over.fetch_add(1, std::memory_order_relaxed);
      } else {
        RawSample& s = b->s[i];
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s.mono_ns = uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
        uint32_t k = 0;
        unw_cursor_t cur;
        if (g_init_local2(&cur, static_cast<unw_context_t*>(uc), UNW_INIT_SIGNAL_FRAME) == 0) {
          do {
            unw_word_t ip = 0;
            if (g_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0) break;
            s.ip[k++] = uintptr_t(ip);
          } while (k < kMaxFrames && g_step(&cur) > 0);
        }
        s.frames = k;
        if (k > 0) b->n.store(i + 1, std::memory_order_release);
        g_taken.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  errno = saved;
}

ThreadBuf* own_buf() {
  if (t_buf) return t_buf;
  if (t_never) return nullptr;
  size_t bytes = sizeof(ThreadBuf) + sizeof(RawSample) * (g_cap - 1);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    t_never = true;
    return nullptr;
  }
  auto* b = new (p) ThreadBuf;
  b->bytes = bytes;
  b->cap = g_cap;
  b->tid = uint32_t(syscall(SYS_gettid));  // once per thread
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = g_signal.load(std::memory_order_relaxed);
  ev._sigev_un._tid = pid_t(b->tid);
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &b->timer) != 0) {
    munmap(p, bytes);
    t_never = true;
    return nullptr;
  }
  if (!take_timer_slot(b->timer, &b->slot)) {
    timer_delete(b->timer);
    munmap(p, bytes);
    t_never = true;
    return nullptr;
  }
  b->has_timer = true;
  t_buf = b;
  if (g_key_ok) pthread_setspecific(g_key, b);
  return b;
}

bool host_uses(int sig) {
  struct sigaction old;
  if (sigaction(sig, nullptr, &old) != 0) return true;
  if (old.sa_flags & SA_SIGINFO) return old.sa_sigaction != handler;
  return old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN;
}

// The perf sampler when this process may use it (the probe opens and maps one event) and libunwind's
// remote unwinder loads; `why` otherwise.
bool try_perf(const Config& c, std::string* why) {
  if (!seccomp::perf_event_open_safe()) {  // never called where it would kill the host
    *why = seccomp::why_not();
    return false;
  }
  if (!perf::probe(c, why)) return false;
  if (!perfu::load()) {
    *why = "libunwind-x86_64.so.8 not found";
    return false;
  }
  perf::start(c);
  return true;
}

void init_signal(const Config& c);

}  // namespace

void init(const Config& c) {
  if (!c.cpu_samples) {
    std::snprintf(g_why_off, sizeof g_why_off, "off (TXRAY_CPU_SAMPLES=0)");
    return;
  }
  g_period_ns = uint64_t(c.cpu_sample_ms) * 1'000'000ull;
  // auto in process mode: the signal sampler (the process's transaction begins in the constructor, and
  // the agent thread that would drain perf rings starts only at exit there: perf_sampler.h).
  bool want_perf = c.cpu_sampler == Config::CpuSampler::perf ||
                   (c.cpu_sampler == Config::CpuSampler::automatic && c.mode != Mode::process);
  if (want_perf) {
    std::string why;
    if (try_perf(c, &why)) {
      // auto: the first thread's real open may still fail (the ring's mmap: a locked-memory limit);
      // the signal sampler then takes over (perf_refused_at_first_open), with libunwind loaded now, in
      // an ordinary context, not inside that thread's hook.
      g_auto = c.cpu_sampler == Config::CpuSampler::automatic;
      if (g_auto) stacks::preload();
      return;
    }
    if (c.cpu_sampler == Config::CpuSampler::perf) {
      std::snprintf(g_why_off, sizeof g_why_off, "off (TXRAY_CPU_SAMPLER=perf: %s)", why.c_str());
      return;
    }
    std::snprintf(g_perf_refused, sizeof g_perf_refused, "%s", why.c_str());
  }
  init_signal(c);
}

namespace {

void init_signal(const Config& c) {
  if (!load_unwinder()) {
    std::snprintf(g_why_off, sizeof g_why_off, "off (libunwind.so.8 not found)");
    return;
  }
  g_period_ns = uint64_t(c.cpu_sample_ms) * 1'000'000ull;
  g_cap = c.cpu_samples_max ? c.cpu_samples_max : 1;
  g_keep_armed = c.cpu_sample_keep_armed;
  // A real-time signal the program has no handler for, from SIGRTMAX-3 down (SIGRTMIN.. are the ones
  // programs pick first; glibc keeps 32 and 33 below SIGRTMIN for itself).
  int sig = 0;
  if (c.cpu_sample_signal) {
    if (!host_uses(c.cpu_sample_signal)) sig = c.cpu_sample_signal;
  } else {
    for (int s = SIGRTMAX - 3; s >= SIGRTMAX - 10 && s > SIGRTMIN; --s)
      if (!host_uses(s)) {
        sig = s;
        break;
      }
  }
  if (!sig) {
    std::snprintf(g_why_off, sizeof g_why_off, "off (no free real-time signal)");
    return;
  }
  struct sigaction sa{};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);  // nothing else runs on this thread while a sample is taken
  if (sigaction(sig, &sa, nullptr) != 0) {
    std::snprintf(g_why_off, sizeof g_why_off, "off (sigaction: %s)", std::strerror(errno));
    return;
  }
  g_key_ok = pthread_key_create(&g_key, on_thread_exit) == 0;
  // Warm libunwind up here, not in the first signal handler (it sets up its address space lazily).
  uintptr_t warm[4];
  stacks::capture(warm, 4, false);
  g_signal.store(sig, std::memory_order_release);
}

}  // namespace

Mechanism mechanism() {
  if (perf::active()) return Mechanism::perf;
  return g_signal.load(std::memory_order_relaxed) && !g_stopped.load(std::memory_order_relaxed)
             ? Mechanism::signal
             : Mechanism::off;
}

std::string status() {
  int sig = g_signal.load(std::memory_order_relaxed);
  char buf[320];
  if (perf::active()) {
    int n = std::snprintf(buf, sizeof buf, "perf, every %llu us of thread CPU, %u KiB stacks",
                          (unsigned long long)(g_period_ns / 1000), perf::stack_bytes() / 1024);
    if (uint64_t u = perf::threads_unsampled(); u && n > 0 && size_t(n) < sizeof buf)
      std::snprintf(buf + n, sizeof buf - size_t(n), "; %llu threads unsampled (%s)", (unsigned long long)u,
                    perf::last_open_error().c_str());
    return buf;
  }
  if (!sig) return g_why_off;
  if (g_stopped.load(std::memory_order_relaxed))
    std::snprintf(buf, sizeof buf, "off (the program took signal %d)", sig);
  else
    std::snprintf(buf, sizeof buf, "signal %d, every %llu us of thread CPU%s%s%s", sig,
                  (unsigned long long)(g_period_ns / 1000), g_keep_armed ? "" : ", armed per transaction",
                  g_perf_refused[0] ? "; perf refused: " : "", g_perf_refused);
  return buf;
}

// status() is a function of these values alone: compared with those of the last call, they say whether
// its text can be reused (formatting it with snprintf every batch was ~1,500 instructions a
// batch with a sampler on, ~190 a request under callgrind). One cache per thread, never destroyed (the
// exit flush may ask after this thread's thread_local destructors ran).
const std::string& status_now() {
  struct Cache {
    bool valid = false;
    bool perf = false, stopped = false, keep_armed = false;
    int sig = 0;
    uint64_t period_ns = 0, unsampled = 0;
    uint32_t stack_bytes = 0;
    std::string open_error, why_off, perf_refused, text;
  };
  static thread_local Cache* cache = new Cache;
  Cache& c = *cache;
  bool perf_on = perf::active();
  int sig = g_signal.load(std::memory_order_relaxed);
  bool stopped = g_stopped.load(std::memory_order_relaxed);
  uint32_t stack = perf_on ? perf::stack_bytes() : 0;
  uint64_t unsampled = perf_on ? perf::threads_unsampled() : 0;
  std::string open_error = unsampled ? perf::last_open_error() : std::string();
  if (c.valid && c.perf == perf_on && c.sig == sig && c.stopped == stopped && c.keep_armed == g_keep_armed &&
      c.period_ns == g_period_ns && c.stack_bytes == stack && c.unsampled == unsampled &&
      c.open_error == open_error && c.why_off == g_why_off && c.perf_refused == g_perf_refused)
    return c.text;
  c.perf = perf_on;
  c.sig = sig;
  c.stopped = stopped;
  c.keep_armed = g_keep_armed;
  c.period_ns = g_period_ns;
  c.stack_bytes = stack;
  c.unsampled = unsampled;
  c.open_error = open_error;
  c.why_off = g_why_off;
  c.perf_refused = g_perf_refused;
  c.text = status();
  c.valid = true;
  return c.text;
}

void before_start(Window* w) {
  if (perf::active()) perf::before_start(w);
  else clock::page::on_begin();  // the switch-checked clock's page without the perf sampler
}

void on_begin(Window* w) {
  if (!g_signal.load(std::memory_order_relaxed) || g_stopped.load(std::memory_order_relaxed)) return;
  ThreadBuf* b = own_buf();
  if (!b) return;
  if (b->owner.load(std::memory_order_relaxed)) {
    // Two transactions in flight on one thread: samples cannot say whose they are.
    b->contended.store(true, std::memory_order_relaxed);
    return;
  }
  if (b->strikes >= kMaxStrikes) return;
  b->n.store(0, std::memory_order_relaxed);
  b->over.store(0, std::memory_order_relaxed);
  b->contended.store(false, std::memory_order_relaxed);
  b->refs.fetch_add(1, std::memory_order_relaxed);
  w->buf = b;
  b->owner.store(w, std::memory_order_release);
  b->idle = 0;
  if (b->armed && g_keep_armed) return;
  itimerspec it{};
  it.it_interval.tv_sec = time_t(g_period_ns / 1'000'000'000ull);
  it.it_interval.tv_nsec = long(g_period_ns % 1'000'000'000ull);
  it.it_value = (b->remaining.tv_sec || b->remaining.tv_nsec) ? b->remaining : it.it_interval;
  if (timer_settime(b->timer, 0, &it, nullptr) == 0) b->armed = true;
}

void on_end(Window* w, uint64_t end_mono_ns) {
  if (w->ring) perf::on_end(w, end_mono_ns);
  auto* b = static_cast<ThreadBuf*>(w->buf);
  if (!b) return;
  w->buf = nullptr;
  b->owner.store(nullptr, std::memory_order_release);
  bool own_thread = b == t_buf;
  // Armed per transaction: stopped here, or by the thread's next sample when the end is on another thread.
  if (own_thread && !g_keep_armed) disarm(b);
  uint32_t n = b->n.load(std::memory_order_acquire);
  uint32_t over = b->over.load(std::memory_order_relaxed);
  if (b->contended.load(std::memory_order_relaxed)) {
    if (own_thread) ++b->strikes;
    g_dropped.fetch_add(n + over, std::memory_order_relaxed);
    w->samples_dropped = n + over;
  } else if (n > 0) {
    try {
      w->samples.assign(b->s, b->s + n);
      w->samples_dropped = over;
      g_dropped.fetch_add(over, std::memory_order_relaxed);
    } catch (...) {
      g_dropped.fetch_add(n + over, std::memory_order_relaxed);
    }
  } else {
    w->samples_dropped = over;
    g_dropped.fetch_add(over, std::memory_order_relaxed);
  }
  release(b);
}

void check_host_signal() {
  int sig = g_signal.load(std::memory_order_relaxed);
  if (!sig || g_stopped.load(std::memory_order_relaxed)) return;
  if (host_uses(sig)) host_takes_signal();
}

bool is_sample_signal(int sig) { return sig != 0 && sig == g_signal.load(std::memory_order_relaxed); }

void host_takes_signal() {
  if (g_stopped.exchange(true)) return;
  // Every timer stopped before the program's handler is in place: none of our signals should reach it.
  itimerspec zero{};
  size_t used = g_timers_used.load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i)
    if (uintptr_t v = g_timers[i].load(std::memory_order_acquire)) timer_settime(reinterpret_cast<timer_t>(v - 1), 0, &zero, nullptr);
}

void perf_refused_at_first_open(const char* why) {
  static std::atomic<bool> once{false};
  if (!g_auto || once.exchange(true)) return;
  std::snprintf(g_perf_refused, sizeof g_perf_refused, "%s", why);
  perf::stop();
  init_signal(config());
}

void after_fork_child() {
  perf::after_fork_child();
  // Timers are not inherited; the buffer's memory is (this thread's copy), and is left alone.
  t_buf = nullptr;
  if (g_key_ok) pthread_setspecific(g_key, nullptr);
  // Only the slots ever taken: touching all 8 pages of the table cost every forked child 8 page faults.
  size_t used = g_timers_used.load(std::memory_order_relaxed);
  for (size_t i = 0; i < used; ++i) g_timers[i].store(0, std::memory_order_relaxed);
  g_timers_used.store(0, std::memory_order_relaxed);
}

void note_dropped(uint64_t n) {
  if (n) g_dropped.fetch_add(n, std::memory_order_relaxed);
}
uint64_t dropped_total() { return g_dropped.load(std::memory_order_relaxed); }
uint64_t taken_total() { return g_taken.load(std::memory_order_relaxed); }

}  // namespace txray::cpu
