// The perf sampler, the agent thread's side (docs/stacks.md "CPU samples: two samplers"):
// drains the threads' rings (cpu/perf_sampler.h), unwinds each sample's copied stack
// (cpu/perf_unwind.h) and gives each finished transaction the samples of its thread taken between its
// START and its END, as cpu::RawSample (what the signal sampler's handler makes), so transport/cpu_profile
// puts them in rows by time exactly as it does for the signal sampler.
//
// When: poll() at every turn of the agent thread's loop (every 5 ms while transactions run), so a ring
// never holds more than a few ms of their samples; settle() for every finished transaction the agent thread takes, before
// it is encoded (it drains the transaction's ring first: every sample up to its END is in the ring by
// then, written by the kernel on the sampled thread's CPU before END was stamped).
//
// Samples outside every transaction are discarded without being unwound: when the ring has no
// transaction in flight (no reference), samples older than the clock read before looking are nobody's.
// While transactions are in flight, samples wait (unwound) in a per-thread list until their
// transaction is settled; the list is bounded (the per-transaction cap + 64), the oldest dropped and
// counted. A full ring loses samples in the kernel (PERF_RECORD_LOST): counted apart, lost_total().
#pragma once

#include <cstdint>

namespace txray {
struct Transaction;

namespace cpu::perfdrain {

// Returns whether a transaction is in flight on a sampled thread (its samples are coming in): the agent
// thread keeps its short turns then (transport.cpp).
bool poll();
void settle(Transaction& t);
uint64_t lost_total();

// Forked child: the parent's lists are forgotten (the rings are not mapped in the child).
void after_fork_child();

}  // namespace cpu::perfdrain
}  // namespace txray
