#include "trace.h"

#include <dlfcn.h>

namespace txray::samples::trace {

namespace {

// Signatures of the agent's public C API (agent/include/txray/txray.h).
using BeginFn = void (*)(const char* name);
using EndFn = void (*)(int status, const char* error);
using StepFn = void (*)(const char* text);

struct Api {
  BeginFn begin = nullptr;
  EndFn end = nullptr;
  StepFn step = nullptr;
};

const Api& api() {
  // Resolved once: the agent is either preloaded at start or absent for the whole run.
  static const Api a = [] {
    Api r;
    r.begin = reinterpret_cast<BeginFn>(dlsym(RTLD_DEFAULT, "txray_begin"));
    r.end = reinterpret_cast<EndFn>(dlsym(RTLD_DEFAULT, "txray_end"));
    r.step = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "txray_step"));
    return r;
  }();
  return a;
}

}  // namespace

bool agent_present() { return api().begin != nullptr; }

void tx_begin(const std::string& name) {
  if (auto f = api().begin) f(name.c_str());
}

void tx_end(int status, const std::string& error) {
  if (auto f = api().end) f(status, error.empty() ? nullptr : error.c_str());
}

void mark(const std::string& text) {
  if (auto f = api().step) f(text.c_str());
}

}  // namespace txray::samples::trace
