// The transport: finished transactions leave the host's threads through a bounded lock-free queue and
// one agent thread (started on first use, all signals blocked) encodes them in batches and sends them
// with a ZeroMQ PUSH socket. The host never blocks here: a full queue drops the transaction and counts
// it; a refused send (collector away) counts it as send_failed. The host makes no system call here
// either, except the first push after a quiet spell, which wakes the agent thread from its long wait.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/transaction.h"
#include "transport/identity.h"

namespace txray::transport {

// Creates the queue (capacity from the configuration) and installs enqueue() as the core's sink.
void init(const Identity& id);

// Hands a finished transaction to the agent thread (starting it if needed); drops it when the queue is
// full. Takes ownership.
void enqueue(Transaction* t);

// Starts the agent thread now if it is not running and may be (not at exit, not just after a fork):
// the perf sampler's rings must be drained while transactions run (cpu/perf_sampler.h).
void start_for_samples();

// A forked child's transactions that ended before the agent thread was wanted (within kChildDeferNs of
// the fork) are queued with no thread to send them: set while that is so (transport.cpp).
extern std::atomic<bool> g_held;
void start_held();

// The calling thread is about to wait for more work (accept, epoll_wait, poll, select): a child that
// holds finished transactions and now goes idle starts the agent thread for them. Waiting for the next
// exit() instead lost them whenever the wait ended in a signal's default action — php-fpm's master
// sends SIGTERM to its children right after SIGQUIT (process_control_timeout = 0, the default), and a
// worker that served a burst just after its fork then idled held that burst until then. A child that
// serves one request and exits never waits after it, so it still pays no thread. One relaxed load.
inline void before_wait() {
  if (__builtin_expect(g_held.load(std::memory_order_relaxed), 0)) start_held();
}
// The same for a hook that ends in a tail call of the real function (the event-wait hooks): the rare
// path is a function of its own, so the common one keeps no stack frame.
template <class F, class... A>
__attribute__((noinline, cold)) auto start_held_then(F real, A... a) {
  start_held();
  return real(a...);
}
template <class F, class... A>
inline auto wait_call(F real, A... a) {
  if (__builtin_expect(g_held.load(std::memory_order_relaxed), 0)) return start_held_then(real, a...);
  return real(a...);
}

// Process exit is starting: transactions ended from now on do not start the agent thread (flush()
// sends them on the exiting thread).
void begin_exit();

// Process exit: sends on the calling thread when no agent thread was started; otherwise wakes the agent thread, lets it send what is queued and close its socket, waiting at
// most `timeout_ms`. Returns false when it did not finish in time (the process exits anyway).
// here_too = false: never on the calling thread (it may be interrupted in the middle of an allocation).
bool flush(uint32_t timeout_ms, bool here_too = true);

// In a forked child: forgets the parent's agent thread and queue (without touching them), closes its
// copy of the parent's connection, resets the counters; the child's own queue, identity, thread and
// connection are made when it first sends.
void after_fork_child();

// The agent thread's long waits (quiet spells begun) and the pushes that ended one (tests, docs).
struct IdleStats {
  uint64_t quiet_spells = 0;
  uint64_t woken_by_host = 0;
  bool quiet = false;  // in its long wait now
};
IdleStats idle_stats();

// Process-mode transaction names use the identity's argv_name.
const Identity& identity();

}  // namespace txray::transport
