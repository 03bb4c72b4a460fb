// What every sample server does around its serving loop: stop cleanly on SIGINT/SIGTERM (so that an
// agent's exit handlers run and flush what it recorded) and tell its caller which port it listens on.
#pragma once

#include <functional>
#include <string>

namespace txray::samples {

// Blocks SIGINT and SIGTERM in the calling thread (call it from main before any thread is started, so
// every thread inherits the mask), runs `serve` on a thread of its own, and when one of the two signals
// arrives ends the process with std::exit(0): atexit handlers run (an agent flushes what it recorded),
// while main's locals, which serving threads may still be using, are left alone.
[[noreturn]] void serve_until_signal(const std::function<void()>& serve);

// The same, but returns the signal number instead of exiting, for a caller that has more to do after
// the signal (a pre-fork parent stopping its workers).
int run_until_signal(const std::function<void()>& serve);

// Prints "<name> listening on <what> port <port>" on stdout and flushes: tests and scripts wait for it.
// From then on SIGINT/SIGTERM are kept for run_until_signal, which a program that announces must call.
void announce(const std::string& name, const std::string& what, int port);

// Thread CPU time of the calling thread, in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
long long thread_cpu_ns();
long long mono_ns();

}  // namespace txray::samples
