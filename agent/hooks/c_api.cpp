// The explicit C API's entry points (agent/include/txray/txray.h looks them up with dlsym).
#include <cstring>

#include "core/attribution.h"
#include "core/config.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "hooks/hook.h"

namespace {
// The transaction this thread started with txray_agent_begin (only that one can be ended by the API).
thread_local txray::Transaction* t_api_tx __attribute__((tls_model("initial-exec"))) = nullptr;

// A thread that exits (pthread_exit, or returning from its start function) inside a transaction it began
// with txray_begin: the transaction ends there with an error, rather than stay open (and held) forever.
void end_api_tx_at_thread_exit() {
  txray::Transaction* t = t_api_tx;
  t_api_tx = nullptr;
  if (t && txray::tx::thread_current() == t) txray::tx::end(t, 0, "thread exited before txray_end");
}
[[maybe_unused]] const bool g_exit_hook_set = (txray::tx::set_thread_exit_hook(end_api_tx_at_thread_exit), true);
}

extern "C" {

int txray_agent_begin(const char* name) {
  if (!name || !txray::host_thread_enabled() || txray::config().mode != txray::Mode::http) return 0;
  if (txray::rec::current_request()) return 0;  // already inside a transaction (an HTTP request)
  txray::Transaction* t = txray::tx::begin(name, "api");
  txray::tx::make_current(t);
  if (txray::tx::thread_current() != t) {  // no slot for this thread (counted): nothing to end it by
    txray::tx::end(t, 0, "");
    return 0;
  }
  t_api_tx = t;
  return 1;
}

int txray_agent_end(int status, const char* error) {
  txray::Transaction* t = t_api_tx;
  if (!t || txray::tx::thread_current() != t) {
    t_api_tx = nullptr;
    return 0;
  }
  t_api_tx = nullptr;
  txray::tx::end(t, status, error ? error : "");
  return 1;
}

int txray_agent_step(const char* text) {
  if (!text || !txray::host_thread_enabled()) return 0;
  txray::Transaction* t = txray::rec::current_request();
  if (!t) return 0;
  return txray::rec::add(t, txray::StepKind::MESSAGE, text) ? 1 : 0;
}

// Context hand-off (txray.h: txray_context_*). The handle is checked by the agent: a stale or made-up
// one attaches nothing.
unsigned long long txray_agent_ctx_capture(void) {
  if (!txray::host_thread_enabled() || txray::config().mode != txray::Mode::http) return 0;
  return txray::attr::capture(txray::rec::current_request());
}

int txray_agent_ctx_attach(unsigned long long ctx) {
  if (!ctx || !txray::host_thread_enabled()) return 0;
  return txray::attr::attach(ctx) ? 1 : 0;
}

void txray_agent_ctx_detach(void) {
  if (txray::host_thread_enabled()) txray::attr::detach();
}

void txray_agent_ctx_release(unsigned long long ctx) {
  if (ctx && txray::host_thread_enabled()) txray::attr::release(ctx);
}

const char* txray_agent_version(void) { return TXRAY_VERSION_STRING; }

}  // extern "C"
