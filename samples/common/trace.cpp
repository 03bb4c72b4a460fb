#include "trace.h"

// The agent's public header (agent/include/txray/txray.h) is header-only: each call looks the agent up
// with dlsym once and does nothing when it is not loaded. Until that header is in the tree, the same
// exported entry points are looked up here directly.
#if __has_include(<txray/txray.h>)
#include <txray/txray.h>
#else
#include <dlfcn.h>
namespace {
template <typename F>
F agent_fn(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}
int txray_begin(const char* name) {
  static auto f = agent_fn<int (*)(const char*)>("txray_agent_begin");
  return f ? f(name) : 0;
}
int txray_end(int status, const char* error) {
  static auto f = agent_fn<int (*)(int, const char*)>("txray_agent_end");
  return f ? f(status, error) : 0;
}
int txray_step(const char* text) {
  static auto f = agent_fn<int (*)(const char*)>("txray_agent_step");
  return f ? f(text) : 0;
}
}  // namespace
#endif

namespace txray::samples::trace {

void tx_begin(const std::string& name) { txray_begin(name.c_str()); }
void tx_end(int status, const std::string& error) { txray_end(status, error.empty() ? nullptr : error.c_str()); }
void mark(const std::string& text) { txray_step(text.c_str()); }

}  // namespace txray::samples::trace
