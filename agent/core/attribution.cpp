#include "core/attribution.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/config.h"
#include "core/counters.h"
#include "core/span_owner.h"
#include "core/unattributed.h"

namespace txray::attr {

constinit thread_local int t_window_fd __attribute__((tls_model("initial-exec"))) = -1;

namespace {

struct ThreadState {
  bool event_loop = false;  // had two requests of its own in flight at once (sticky)
  bool hinted = false;      // a runtime gives hints on this thread
  ReqRef entered;           // `E` hint
  uint64_t attached = 0;    // capture handle attached here
};
thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));

// Captured transactions, named by (generation << 32 | slot + 1) so that a stale or made-up handle finds
// nothing. Fixed size: a hand-off beyond it is refused and counted.
constexpr uint32_t kCaptures = 4096;
struct Capture {
  std::atomic<Transaction*> tx{nullptr};
  std::atomic<uint32_t> gen{1};
};
Capture g_captures[kCaptures];
std::atomic<uint32_t> g_next_capture{0};

Transaction* lookup(uint64_t handle) {
  uint32_t slot = uint32_t(handle & 0xffffffffu);
  if (slot == 0 || slot > kCaptures) return nullptr;
  Capture& c = g_captures[slot - 1];
  if (c.gen.load(std::memory_order_acquire) != uint32_t(handle >> 32)) return nullptr;
  return c.tx.load(std::memory_order_acquire);
}

// Handler windows (rule 5) hold where a request's handler runs right after its bytes are read, to
// completion, before the loop reads anything else (nginx and other C event loops). Runtimes with a
// scheduler of their own run other requests' callbacks in between without polling again (asyncio's
// ready queue, libuv's timers and immediates), so in their processes the window is not used — their
// shims give hints instead. Decided once per process, the first time a thread turns out to be an event
// loop; TXRAY_HANDLER_WINDOWS=0/1 overrides.
std::atomic<int> g_windows{-1};

bool windows_allowed() {
  int w = g_windows.load(std::memory_order_relaxed);
  if (__builtin_expect(w >= 0, 1)) return w != 0;
  const char* env = getenv("TXRAY_HANDLER_WINDOWS");
  if (env && *env) w = strcmp(env, "0") != 0;
  else
    w = !(dlsym(RTLD_DEFAULT, "uv_run") || dlsym(RTLD_DEFAULT, "Py_Initialize") ||
          dlsym(RTLD_DEFAULT, "JNI_CreateJavaVM") || dlsym(RTLD_DEFAULT, "ruby_init"));
  g_windows.store(w, std::memory_order_relaxed);
  return w != 0;
}

}  // namespace

void request_began(Transaction* t, int fd) {
  t->req_fd = fd;
  Transaction* previous = tx::thread_current();
  if (previous && previous != t && !t_state.event_loop) {
    t_state.event_loop = true;
    if (!windows_allowed()) t_state.hinted = true;  // no guessing here: hints or nothing
  }
  if (t_state.event_loop) t->flat = true;  // its calls overlap with other requests' and each other
  tx::make_current(t);
  t_window_fd = fd;
}

Transaction* resolve(const ReqRef& r) {
  if (!r.valid()) return nullptr;
  return sock::request_on(r.fd, 0, r.txid);
}

Transaction* current() {
  if (Transaction* p = tx::process_transaction()) return p;
  ThreadState& ts = t_state;
  if (ts.attached) return lookup(ts.attached);
  if (ts.entered.valid()) return resolve(ts.entered);
  if (!ts.event_loop) return tx::thread_current();
  if (ts.hinted || t_window_fd < 0) return nullptr;
  return resolve(ReqRef{t_window_fd, 0});
}

Transaction* current_or_container() {
  Transaction* t = current();
  return t ? t : unattr::container();
}

bool event_loop() { return t_state.event_loop || t_state.hinted; }

void set_hinted() { t_state.hinted = true; }
void enter(const ReqRef& r) { t_state.entered = r; }
void leave() { t_state.entered = ReqRef{}; }

uint64_t capture(Transaction* t) {
  if (!t || t->finished || unattr::is_container(t) || t->shared) return 0;
  t->mt = true;  // on the owner thread, before any other thread can see the handle
  t->refs.fetch_add(1, std::memory_order_acq_rel);
  for (uint32_t k = 0; k < kCaptures; ++k) {
    uint32_t i = g_next_capture.fetch_add(1, std::memory_order_relaxed) % kCaptures;
    Transaction* expected = nullptr;
    if (g_captures[i].tx.compare_exchange_strong(expected, t, std::memory_order_acq_rel)) {
      uint32_t gen = g_captures[i].gen.load(std::memory_order_acquire);
      return (uint64_t(gen) << 32) | (i + 1);
    }
  }
  counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
  tx::unref(t);
  return 0;
}

bool attach(uint64_t handle) {
  if (!lookup(handle)) return false;
  t_state.attached = handle;
  return true;
}

void detach() { t_state.attached = 0; }
uint64_t attached() { return t_state.attached; }

void release(uint64_t handle) {
  uint32_t slot = uint32_t(handle & 0xffffffffu);
  if (slot == 0 || slot > kCaptures) return;
  Capture& c = g_captures[slot - 1];
  uint32_t gen = uint32_t(handle >> 32);
  // The generation moves on first: a second release of the same handle, or a lookup racing with this
  // one, finds nothing.
  if (!c.gen.compare_exchange_strong(gen, gen + 1 == 0 ? 1 : gen + 1, std::memory_order_acq_rel)) return;
  Transaction* t = c.tx.exchange(nullptr, std::memory_order_acq_rel);
  if (t_state.attached == handle) t_state.attached = 0;
  if (t) tx::unref(t);
}

void after_fork_child() {
  t_state = ThreadState{};
  t_window_fd = -1;
  uint32_t used = g_next_capture.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < kCaptures && i < used; ++i) {
    Capture& c = g_captures[i];
    if (!c.tx.load(std::memory_order_relaxed)) continue;
    c.tx.store(nullptr, std::memory_order_relaxed);  // the parent's: never ended nor freed here
    c.gen.fetch_add(1, std::memory_order_relaxed);
  }
  unattr::after_fork_child();
  span_owner::after_fork_child();
}

}  // namespace txray::attr
