// The program installing a signal handler: when it is for the CPU sampler's signal, the sampler stops
// every timer first and never samples again (cpu/cpu_sampler.h), so the program's handler gets only the
// signals the program itself arranged. Nothing else is looked at; the real call does the work.
#include <signal.h>

#include <cerrno>

#include "cpu/cpu_sampler.h"
#include "hooks/hook.h"

namespace {

bool takes_sample_signal(int sig, bool installs) {
  return installs && txray::cpu::is_sample_signal(sig) && txray::hooks::in_this_process();
}

}  // namespace

extern "C" {

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  auto real = TXRAY_REAL(sigaction, nullptr);
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (takes_sample_signal(sig, act != nullptr)) txray::cpu::host_takes_signal();
  return real(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t handler) {
  auto real = TXRAY_REAL(signal, nullptr);
  if (!real) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  if (takes_sample_signal(sig, true)) txray::cpu::host_takes_signal();
  return real(sig, handler);
}

}  // extern "C"
