// CPU samples of transaction threads: where a row's CPU_T went (docs/agent.md "CPU samples").
//
// While a transaction is open on the thread that began it, a POSIX timer on that thread's CPU clock
// (timer_create(CLOCK_THREAD_CPUTIME_ID), SIGEV_THREAD_ID) sends the thread a real-time signal every
// TXRAY_CPU_SAMPLE_MS of its CPU time (10 by default). The handler only walks the interrupted stack with
// libunwind (at most kMaxFrames return addresses, no symbol lookup, no allocation, errno kept) into a
// per-thread buffer and publishes it with one release store. The timer is armed at the transaction's
// begin and disarmed at its end (its remaining time is kept, so short transactions of one thread are
// sampled in proportion to their CPU too); end() moves the samples into the transaction. Everything
// that costs (symbols, attribution to rows, folding) is done on the agent thread
// (transport/cpu_profile.h).
//
// Never hurt the host: the signal is a real-time one the program does not use (not SIGPROF, which
// profilers of the program's own keep), installed with SA_RESTART; when the program installs a handler
// of its own for it later, the agent notices (check_host_signal(), agent thread, about once a second)
// and stops sampling. A thread that has two transactions in flight at once (an event loop) has its
// samples dropped and counted: they cannot be told apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace txray {
struct Config;

namespace cpu {

constexpr int kMaxFrames = 32;

// One sample as the handler took it: the wall-clock time (CLOCK_MONOTONIC, the clock of row times) and
// the return addresses, innermost first (ip[0] is the interrupted instruction itself).
struct RawSample {
  uint64_t mono_ns;
  uint32_t frames;
  uintptr_t ip[kMaxFrames];
};

// What the agent thread made of a transaction's samples (transport/cpu_profile.h), ready to encode.
struct HotFunction {
  std::string function;  // demangled name, or "module+0xoffset" when the module has no symbol for it
  std::string module;    // file name of the module (libz.so.1, the program)
  uint32_t samples = 0;
};
struct RowHot {
  uint32_t row = 0;      // index in the transaction's steps
  uint32_t samples = 0;  // samples in the row's GAP
  std::vector<HotFunction> top;  // most samples first, at most kTopPerRow
};
struct FoldedStack {
  std::string folded;    // root first, frames separated by ';' (the flame graph's "folded" format)
  uint32_t samples = 0;
};
struct Profile {
  std::vector<RowHot> rows;
  std::vector<FoldedStack> stacks;  // at most kMaxStacks, the rest folded into "(other)"
};
constexpr size_t kTopPerRow = 8;
constexpr size_t kMaxStacks = 200;

// The mechanism in use, for the agent's status (AgentInfo.cpu_sampler).
enum class Mechanism : uint8_t { off, signal, perf };

// What the samplers keep in each transaction (core/transaction.h holds one, `cpu`): the samplers see
// this and never the transaction, so cpu/ needs nothing of core/ but its settings.
struct Window {
  // The signal sampler: the sampled thread's buffer while the transaction is open.
  void* buf = nullptr;
  // The samples once it ended (signal sampler), or once the agent thread drained them (perf sampler).
  std::vector<RawSample> samples;
  // The perf sampler (perf_sampler.h): the begun thread's ring, held until the agent thread has given
  // the transaction its samples (transport/perf_drain.h); the end of its time window; whether another
  // transaction began on the thread while it was open (its samples cannot be told apart).
  void* ring = nullptr;
  uint64_t end_mono_ns = 0;
  uint32_t samples_dropped = 0;
  uint32_t ring_gen = 0;  // the ring slot's generation when taken (a forked child's reused slots)
  bool contended = false;
};

// Chooses the sampler (TXRAY_CPU_SAMPLER: auto tries perf_event_open first, cpu/perf_sampler.h) and,
// for the signal sampler, installs its handler (agent constructor). Safe to call once.
void init(const Config& c);
// "perf, every 10000 us of thread CPU, …" / "signal 61, every …" / "off (TXRAY_CPU_SAMPLES=0)" …
// (the first word names the sampler that runs: perf, signal or off)
std::string status();
// status() as the transport asks for it, once a batch: formatted again only when something it shows
// changed, else the text of the last call on this thread (valid until the next call).
const std::string& status_now();
Mechanism mechanism();

// Transaction hooks (transaction.cpp): begin arms the calling thread's timer, end disarms it and moves
// the thread's samples into t->cpu.samples (or drops and counts them).
// before_start runs before the transaction's start time is read (the perf sampler's reference).
void before_start(Window* w);
void on_begin(Window* w);
void on_end(Window* w, uint64_t end_mono_ns);

// The program installs a handler for `sig` (hooks/signal_hooks.cpp, before the real sigaction runs):
// when it is the sampling signal, every thread's timer is stopped and sampling ends for good.
bool is_sample_signal(int sig);
void host_takes_signal();

// Agent thread, about once a second: stops sampling when the program took the signal for itself.
void check_host_signal();

// auto chose perf and the first thread's event could not be had (its ring's mmap refused): the signal
// sampler takes over from now on, and the status says why (cpu/perf_sampler.cpp calls it, once).
void perf_refused_at_first_open(const char* why);

// Forked child: the parent's timers are gone; forget this thread's buffer (a new one is made).
void after_fork_child();

// Cumulative count of samples dropped (over the per-transaction cap, event-loop threads, no memory).
uint64_t dropped_total();
void note_dropped(uint64_t n);

// Test hook: samples taken by the handler so far in this process.
uint64_t taken_total();

}  // namespace cpu
}  // namespace txray
