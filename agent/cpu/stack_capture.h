// Stack capture: the calling thread's instruction pointers, taken with libunwind on the hot path (a
// failed or slow step; the CPU sampler reuses capture() too). Only raw addresses are taken here;
// turning them into `function (module+0xoff)` is agent/symbolize/'s work, on the transport thread.
//
// libunwind (libunwind8, the nongnu one) is dlopen()ed RTLD_LOCAL the first time a stack is wanted (or
// at preload()): Debian's libunwind.a is not position-independent, so it cannot be linked into the
// agent, and linking libunwind.so.8 as a dependency would put its `_Unwind_*` functions in the host's
// global scope, in front of libgcc_s's (C++ exceptions of the host would unwind with another unwinder).
// Loaded RTLD_LOCAL nothing of it is visible to the host. When it cannot be loaded, no stacks are taken.
//
// Rules (what makes it safe on the hot path):
// - capture() never allocates and never takes a lock of the agent; libunwind itself walks at most
//   kMaxFrames + kMaxSkipped frames, stops at a frame without unwind information (its frame-pointer
//   fallback validates every address it reads, with mincore/msync, before reading it) and keeps its
//   per-thread caches (UNW_CACHE_PER_THREAD: no global lock with signals blocked around each step).
// - capture(ips, n, /*may_load=*/false) never loads libunwind: the form for signal handlers. Call
//   preload() from an ordinary context first.
// - Leading frames of the agent itself (the hook, the recorder, this file) and of libunwind are
//   dropped, so frame 0 is the host's code that made the call.
#pragma once

#include <cstdint>
#include <new>
#include <utility>

namespace txray::stacks {

inline constexpr int kMaxFrames = 32;

// A captured stack as it rides with a row: return addresses, innermost first (frame 0 = the caller of
// the hooked function). Allocated only when a stack is taken (Step::stack).
struct RawStack {
  uint32_t n = 0;
  uintptr_t ip[kMaxFrames];
};

// The one pointer a row holds (Step::stack): null, or a RawStack of its own. Copying a row copies its
// stack (rows are rarely copied; moved, it is one pointer).
class StackBox {
 public:
  StackBox() = default;
  StackBox(const StackBox& o) : p_(o.p_ ? new (std::nothrow) RawStack(*o.p_) : nullptr) {}
  StackBox(StackBox&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  StackBox& operator=(StackBox o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~StackBox() { delete p_; }
  void reset(RawStack* p) {
    delete p_;
    p_ = p;
  }
  explicit operator bool() const { return p_ != nullptr; }
  const RawStack* operator->() const { return p_; }
  const RawStack* get() const { return p_; }

 private:
  RawStack* p_ = nullptr;
};

// Settings (Config: TXRAY_STACKS, TXRAY_STACK_MS). Set by the agent's constructor; tests set their own.
struct Settings {
  bool on = true;              // TXRAY_STACKS=0 turns every stack off
  uint64_t slow_ns = 100'000'000;  // TXRAY_STACK_MS (default 100): a call step at least this long gets one;
                                   // TXRAY_STACK_MS=0: slow steps never do (failed steps still do)
};
void configure(const Settings& s);
const Settings& settings();

// Loads libunwind if not done yet (an ordinary context: dlopen). True when capture() can work.
bool preload();

// True while the calling thread is inside libunwind (the pipe2 hook moves libunwind's pipe out of the
// program's way then: hooks/pipe_hooks.cpp).
bool in_unwind();
// Marks the calling thread as inside libunwind for a scope (the perf sampler's unwinder, which loads a
// second copy of libunwind: transport/perf_unwind.cpp).
class UnwindScope {
 public:
  UnwindScope();
  ~UnwindScope();
  UnwindScope(const UnwindScope&) = delete;
  UnwindScope& operator=(const UnwindScope&) = delete;

 private:
  bool prev_;
};

// Takes the calling thread's stack: up to `max` (<= kMaxFrames) return addresses into ips, innermost
// first, the agent's and libunwind's leading frames dropped. Returns how many (0: libunwind missing
// or not loaded yet with may_load = false, or nothing to unwind). A few µs; no allocation, no lock of
// the agent.
int capture(uintptr_t* ips, int max, bool may_load = true);

// Stacks taken and stacks wanted but not taken (libunwind missing, out of memory) since start.
uint64_t taken();
uint64_t missed();
void note_missed();

}  // namespace txray::stacks
