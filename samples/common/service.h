// What every sample server does around its serving loop: stop cleanly on SIGINT/SIGTERM (so that an
// agent's exit handlers run and flush what it recorded) and tell its caller which port it listens on.
#pragma once

#include <functional>
#include <string>

namespace txray::samples {

// Blocks SIGINT and SIGTERM in the calling thread (call this first in main, before any thread is
// started, so every thread inherits the mask), runs `serve` on a thread of its own, and returns the
// signal number once one of the two arrives. `serve` normally never returns.
int run_until_signal(const std::function<void()>& serve);

// Prints "<name> listening on <what> port <port>" on stdout and flushes: tests and scripts wait for it.
void announce(const std::string& name, const std::string& what, int port);

// Thread CPU time of the calling thread, in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
long long thread_cpu_ns();
long long mono_ns();

}  // namespace txray::samples
