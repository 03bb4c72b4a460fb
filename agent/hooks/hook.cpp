// Hook-layer helpers (hook.h): resolving real functions and classifying threads. No interposers here;
// this file is part of the core library so that tests and the transport can use it without preloading.
#include "hooks/hook.h"

#include <dlfcn.h>
#include <unistd.h>


namespace txray::hooks {

constinit thread_local ThreadKind t_kind __attribute__((tls_model("initial-exec"))) = ThreadKind::unknown;
constinit thread_local unsigned t_in_family __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<bool> g_enabled{false};
std::atomic<int> g_pid{0};

bool in_this_process() { return getpid() == g_pid.load(std::memory_order_relaxed); }

void* resolve(const char* name, const char* lib) {
  int saved = errno;
  void* p = dlsym(RTLD_NEXT, name);
  if (!p && lib) {
    // Loaded in local scope by dlopen (Python's _sqlite3): RTLD_NEXT cannot see it (PITFALLS 1).
    if (void* h = dlopen(lib, RTLD_NOLOAD | RTLD_LAZY)) {
      p = dlsym(h, name);
      dlclose(h);  // only drops the reference RTLD_NOLOAD took
    }
  }
  errno = saved;
  return p;
}

ThreadKind classify_thread() {
  // The agent's only thread marks itself (mark_agent_thread); every other thread is the program's,
  // libzmq's "ZMQbg" threads included (the agent does not use libzmq: transport/zmtp.h).
  t_kind = ThreadKind::host;
  return ThreadKind::host;
}

void mark_agent_thread() { t_kind = ThreadKind::agent; }

}  // namespace txray::hooks
