// The perf_event_open CPU sampler, the host's side (docs/stacks.md "CPU samples: two samplers").
//
// Per traced thread, at its first transaction (once: never again on that thread), one software event
// PERF_COUNT_SW_TASK_CLOCK on that thread only, user space only, a sample every TXRAY_CPU_SAMPLE_MS of
// the thread's CPU, each sample carrying the time (CLOCK_MONOTONIC, the clock of row times), the user
// registers and a copy of the top TXRAY_CPU_STACK_KB of the user stack, written by the kernel into a
// ring mapped into the agent's memory. No signal reaches the host; the kernel does the copying.
//
// The event's descriptor is closed as soon as the ring is mapped: the mapping holds the event alive, so
// the program's descriptor table holds nothing of the agent's (its numbers never change, its close or
// dup2 sweeps find nothing) and nothing is inherited across exec; the ring is not copied into fork
// children (the kernel maps it VM_DONTCOPY). Unmapping the ring ends the event.
//
// Per transaction the host thread only adds a reference to its thread's ring and notes the transaction
// as the ring's owner (two atomic operations); the agent thread drains the rings, unwinds each sample's
// copied stack with libunwind and hands the transaction the samples of its time window
// (transport/perf_drain.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace txray {
struct Config;

namespace cpu {
struct Window;  // cpu_sampler.h
}

namespace cpu::perf {

// One traced thread's event and ring. Slots are static and reused once the agent thread retired them.
struct Ring {
  enum State : int { kFree = 0, kOpening, kLive, kExited };
  std::atomic<int> state{kFree};
  std::atomic<int> refs{0};                  // transactions begun on the thread and not yet settled
  std::atomic<Window*> owner{nullptr};       // the window of the transaction open on the thread, if any
  std::atomic<bool> contended{false};        // another transaction began on the thread meanwhile
  std::atomic<uint32_t> generation{0};       // bumped at each reuse of the slot
  uint32_t tid = 0;
  uint32_t strikes = 0;                      // host thread only: contended transactions so far
  void* base = nullptr;                      // the mapping: one header page, then data pages
  size_t bytes = 0;
};

constexpr size_t kMaxRings = 256;

// Whether this process may use the perf sampler, without making an event (perf_sampler.cpp says why):
// `why` gets the reason when not ("perf_event_open: Permission denied"). Also sizes the rings.
bool probe(const Config& c, std::string* why);
// After a successful probe: the perf sampler is the one in use.
void start(const Config& c);
bool active();
// auto's fallback after a refused first open: no more rings are opened.
void stop();

// Transaction hooks (cpu_sampler.cpp), host thread. before_start() runs before the transaction's start
// time is read (so the agent thread, seeing no reference, may discard older samples); on_end() after END.
void before_start(Window* w);
void on_end(Window* w, uint64_t end_mono_ns);
// Lets go of t's ring (the agent thread, once t has its samples; or a transaction dropped before).
void release(Window* w);

// The slots the agent thread looks at: [0, ring_count()).
Ring* ring(size_t i);
size_t ring_count();

// Sizes of one ring (bytes of the data area) and of the stack copy per sample.
size_t data_bytes();
uint32_t stack_bytes();

// Threads whose event could not be opened (no samples for them: EMFILE, the locked-memory limit, no slot)
// and the last reason.
uint64_t threads_unsampled();
std::string last_open_error();

// The agent thread drains the rings: the transport gives a function that starts it if it is not running
// (it otherwise starts at the first finished transaction). Called when a thread's ring is opened, except
// in the agent's constructor (a process-mode transaction: there the agent thread starts at exit, so auto
// takes the signal sampler in process mode).
void set_starter(void (*start)());

// Forked child: the rings are not mapped in the child (VM_DONTCOPY); every slot is forgotten.
void after_fork_child();

}  // namespace cpu::perf
}  // namespace txray
