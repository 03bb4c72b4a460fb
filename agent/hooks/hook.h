// Helpers every hook file uses: finding the real function, the guard that keeps the agent out of its
// own threads and out of nested hooks, and keeping errno.
//
//   extern "C" ssize_t read(int fd, void* buf, size_t n) {
//     auto real = TXRAY_REAL(read, nullptr);
//     if (!real) { errno = ENOSYS; return -1; }   // behave even when the real one is missing
//     txray::HookGuard guard(txray::HookFamily::socket);
//     if (!guard) return real(fd, buf, n);        // agent off / agent thread / nested: pass through
//     ssize_t r = real(fd, buf, n);
//     txray::SaveErrno keep;                      // from here on errno stays as real() left it
//     ...hand the facts to the core (agent/core/recorder.h)...
//     return r;
//   }
//
// Hooks do nothing else: no allocation on plain paths, no clock reads except through the recorder.
//
// Hook functions must be exported: agent/CMakeLists.txt compiles agent/hooks/*.cpp with default
// visibility (the core and transport are hidden), so write them as plain `extern "C"` definitions and
// keep helpers in an anonymous namespace.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>

namespace txray {

namespace hooks {
// dlsym(RTLD_NEXT, name); when that fails and `lib` is given (e.g. "libsqlite3.so.0"), dlsym in
// dlopen(lib, RTLD_NOLOAD | RTLD_LAZY) — libraries Python dlopens in local scope are not visible to
// RTLD_NEXT (PITFALLS 1). Returns nullptr when not found (not cached: it is tried again next call).
__attribute__((cold)) void* resolve(const char* name, const char* lib);

template <typename F>
inline F real_fn(std::atomic<void*>& slot, const char* name, const char* lib) {
  void* p = slot.load(std::memory_order_relaxed);
  if (__builtin_expect(p == nullptr, 0)) {
    p = resolve(name, lib);
    if (p) slot.store(p, std::memory_order_relaxed);
  }
  return reinterpret_cast<F>(p);
}
}  // namespace hooks

// The real `name` (typed like the declaration of ::name in scope), resolved on first use and cached;
// nullptr if it cannot be found. `lib` is the library to look in when RTLD_NEXT fails, or nullptr.
// To resolve eagerly, call it once from a constructor (__attribute__((constructor))).
#define TXRAY_REAL(name, lib)                                                                     \
  ([]() {                                                                                         \
    static std::atomic<void*> txray_slot_{nullptr};                                               \
    return ::txray::hooks::real_fn<decltype(&::name)>(txray_slot_, #name, lib);                   \
  }())

// What kind of thread runs a hook, decided once per thread.
enum class ThreadKind : unsigned char { unknown = 0, host = 1, agent = 2 };

namespace hooks {
// Thread-local state of the hook layer (initial-exec TLS: no allocation, no lock on first access).
extern constinit thread_local ThreadKind t_kind __attribute__((tls_model("initial-exec")));
// One bit per HookFamily: set while a hook of that family runs on this thread.
extern constinit thread_local unsigned t_in_family __attribute__((tls_model("initial-exec")));
// False in TXRAY_MODE=off and before the agent's constructor ran.
extern std::atomic<bool> g_enabled;
// The pid the agent runs in (set at start-up and in a forked child).
extern std::atomic<int> g_pid;
// False in a vfork()/posix_spawn child, which runs in its parent's memory until it execs: hooks that
// change shared state (close, shutdown) must leave it alone there (PITFALLS 6). A getpid() system call:
// not for read/write paths.
bool in_this_process();
// Classifies the calling thread (the agent's own thread marks itself; every other thread is a host thread).
ThreadKind classify_thread();
// Marks the calling thread as an agent thread for good (the transport thread calls it first thing).
void mark_agent_thread();
// A write() to the runtime hint descriptor (hints/hint_protocol.h): true when the agent took it, with
// what write() returns in *result; false: make the real call (no agent here: the kernel says EBADF).
bool hint_write(const void* buf, size_t n, long* result);
}  // namespace hooks

// Families of hooks. Only the outermost call of a family is a step (libsqlite3 calls its own
// sqlite3_prepare_v3, libpq its own PQexec: PITFALLS 2); different families nest freely (a SOCKET row
// inside a DB_CONNECT, a DNS row inside an HTTP_CALL).
enum class HookFamily : unsigned { socket = 0, sql = 1, http_call = 2, dns = 3, tls = 4, api = 5, other = 6 };

// True when the agent is enabled and the calling thread is a host (not an agent) thread.
inline bool host_thread_enabled() {
  if (!hooks::g_enabled.load(std::memory_order_relaxed)) return false;
  ThreadKind k = hooks::t_kind;
  if (__builtin_expect(k == ThreadKind::unknown, 0)) k = hooks::classify_thread();
  return k == ThreadKind::host;
}

// True on the calling thread when a hook of `family` should record: the agent is enabled, this is a
// host thread and no other hook of the same family is running on this thread (a library calling its own
// hooked functions, or a signal handler interrupting a hook). While a true guard lives, nested hooks of
// the same family on this thread see false.
class HookGuard {
 public:
  explicit HookGuard(HookFamily family) : bit_(1u << static_cast<unsigned>(family)) {
    if ((hooks::t_in_family & bit_) || !host_thread_enabled()) return;
    hooks::t_in_family |= bit_;
    active_ = true;
  }
  ~HookGuard() {
    if (active_) hooks::t_in_family &= ~bit_;
  }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
  explicit operator bool() const { return active_; }

 private:
  unsigned bit_;
  bool active_ = false;
};

// Saves errno when constructed and puts it back when destroyed: construct it right after the real call.
class SaveErrno {
 public:
  SaveErrno() : saved_(errno) {}
  ~SaveErrno() { errno = saved_; }
  SaveErrno(const SaveErrno&) = delete;
  SaveErrno& operator=(const SaveErrno&) = delete;

 private:
  int saved_;
};

}  // namespace txray
