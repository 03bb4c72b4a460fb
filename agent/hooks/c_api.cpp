// The explicit C API's entry points (agent/include/txray/txray.h looks them up with dlsym).
#include <cstring>

#include "../core/config.h"
#include "../core/recorder.h"
#include "../core/transaction.h"
#include "hook.h"

namespace {
// The transaction this thread started with txray_agent_begin (only that one can be ended by the API).
thread_local txray::Transaction* t_api_tx __attribute__((tls_model("initial-exec"))) = nullptr;
}

extern "C" {

int txray_agent_begin(const char* name) {
  if (!name || !txray::host_thread_enabled() || txray::config().mode != txray::Mode::http) return 0;
  if (txray::rec::current()) return 0;  // already inside a transaction (an HTTP request)
  txray::Transaction* t = txray::tx::begin(name, "api");
  txray::tx::make_current(t);
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
  txray::Transaction* t = txray::rec::current();
  if (!t) return 0;
  return txray::rec::add(t, txray::StepKind::MESSAGE, text) ? 1 : 0;
}

const char* txray_agent_version(void) { return TXRAY_VERSION_STRING; }

}  // extern "C"
