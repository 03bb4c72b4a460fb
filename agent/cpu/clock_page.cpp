#include "cpu/clock_page.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "cpu/clock.h"
#include "core/config.h"
#include "cpu/seccomp_guard.h"

namespace txray::clock::page {
namespace {

std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_opened{0};
pthread_key_t g_key;
bool g_key_ok = false;

struct ThreadState {
  uint32_t begun = 0;
  bool tried = false;
  void* page = nullptr;
};
thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));

void on_thread_exit(void* p) {
  if (!p || p != t_state.page) return;
  clock::set_thread_switch_page(nullptr);
  t_state.page = nullptr;
  munmap(p, size_t(sysconf(_SC_PAGESIZE)));
}

void open_page() {
  int saved = errno;
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  int fd = int(syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) {
    g_on.store(false, std::memory_order_relaxed);  // refused here: refused for every thread
    errno = saved;
    return;
  }
  size_t bytes = size_t(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  errno = saved;
  if (p == MAP_FAILED) return;
  if (!g_key_ok || pthread_setspecific(g_key, p) != 0) {
    munmap(p, bytes);
    errno = saved;
    return;
  }
  t_state.page = p;
  g_opened.fetch_add(1, std::memory_order_relaxed);
  clock::set_thread_switch_page(p);
  errno = saved;
}

}  // namespace

void configure(const Config& c, bool perf_sampler_runs) {
  if (!c.fast_cpu_clock || perf_sampler_runs) return;
  if (!seccomp::perf_event_open_safe()) return;  // where it would kill the host (seccomp_guard.h)
  g_key_ok = pthread_key_create(&g_key, on_thread_exit) == 0;
  g_on.store(g_key_ok, std::memory_order_release);
}

void on_begin() {
  ThreadState& s = t_state;
  if (s.tried || !g_on.load(std::memory_order_relaxed)) return;
  if (++s.begun < kClockPageAfter) return;
  s.tried = true;
  open_page();
}

uint64_t opened() { return g_opened.load(std::memory_order_relaxed); }

void after_fork_child() {
  // Not mapped here: forgotten, never unmapped. The child's threads count their transactions anew.
  t_state = ThreadState{};
  if (g_key_ok) pthread_setspecific(g_key, nullptr);
  clock::forget_thread_page();
}

}  // namespace txray::clock::page
