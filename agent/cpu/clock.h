// Clocks of the core. The wall clock (CLOCK_MONOTONIC, vDSO, ~25 ns) gives row times and elapsed; the CPU
// clock (CLOCK_THREAD_CPUTIME_ID, a ~0.5-1.3 us system call) is read only at profile row boundaries.
// Tests may replace both through set_clocks_for_test() to get deterministic times.
//
// The switch-checked CPU clock (docs/performance.md "nginx_static"). While a thread runs
// without being switched out, its CPU time advances exactly as the wall clock does. A thread with a
// perf ring (cpu/perf_sampler.h: a task-bound event mapped for the CPU sampler) has a page the kernel
// rewrites each time the thread is scheduled in: its `lock` sequence changes at every sched-in. So a
// thread's CPU time is read once with the system call (the anchor, with the wall time next to it and the
// page's sequence), and then, as long as the sequence is unchanged, as anchor + wall time elapsed since:
// a ~25 ns vDSO read instead of the system call. Any change of the sequence (a switch, a migration, a
// sample) takes the system call again and re-anchors. Values never go back (a clamp), so CPU_T sums stay
// exact. What the wall clock counts and the kernel's thread clock may not: time the hypervisor stole from
// the vCPU and interrupt time, while the thread stayed on its CPU (measured here: +13 ns per 22 us window
// on average). The first thread verifies, with one short sleep, that the kernel does rewrite the page at
// a sched-in; if not, every thread keeps the system call. TXRAY_CPU_CLOCK=syscall turns it off.
//
// Where the kernel lets user space read time from the page (cap_user_time: bare metal and VMs whose
// sched_clock is the TSC; not this development VM, whose kvm-clock leaves it 0), no anchor is needed at
// all: the task clock is the page's time_running at its last update plus the TSC time since
// (user_time_delta()), valid right after a switch too, so every read of such a thread skips the system
// call. Its values are the perf task clock, which does not count what the kernel bills a thread for
// being switched in; a thread's first such read is paired with one system-call read, and its values go
// on from there (never mixed with the system call's).
#pragma once

#include <cstdint>

struct perf_event_mmap_page;

namespace txray::clock {

uint64_t mono_ns();         // CLOCK_MONOTONIC
uint64_t thread_cpu_ns();   // CLOCK_THREAD_CPUTIME_ID (always the system call)
uint64_t process_cpu_ns();  // CLOCK_PROCESS_CPUTIME_ID (process mode: every thread's CPU counts)
uint64_t unix_ns();         // CLOCK_REALTIME, for transaction start times on the wire

// This thread's CPU time at wall time `now` (a mono_ns() the caller has just read): switch-checked where
// the thread has a page, else the system call. *syscall says which one it took.
uint64_t thread_cpu_ns_at(uint64_t now, bool* syscall);

// The calling thread's perf_event_mmap_page (nullptr: none any more). The first page given in a process
// is verified first (one sleep of ~60 us on that thread); a page the kernel does not rewrite at a
// sched-in turns the switch-checked clock off for the process. Off from the start when !enabled.
void set_thread_switch_page(const void* page);
void configure_switch_checked(bool enabled);
// Whether the switch-checked clock runs: 1 verified, 0 off or failed, -1 not decided yet.
int switch_checked_state();
// The calibration of the agent's own cost (transport/self_cost.h) times its units with system-call
// reads on its thread: true makes this thread's reads take the system call until set back to false.
void force_syscall_on_this_thread(bool on);
// A forked child: the parent's pages are not mapped there (the thread that forked forgets its own).
void forget_thread_page();

// The page's time since its last update, in ns, from a cycle count (perf_event_mmap_page's documented
// conversion; `short_` is cap_user_time_short, where the page's counter is narrower than 64 bits).
uint64_t user_time_delta(uint64_t cyc, uint16_t shift, uint32_t mult, uint64_t offset, bool short_,
                         uint64_t time_cycles, uint64_t time_mask);
// The task clock read from the page alone: false when the page does not allow it (no cap_user_time, not
// x86-64) or kept changing under the read.
bool task_clock_from_page(const perf_event_mmap_page* page, uint64_t* ns);
// Whether the calling thread's reads take the page's task clock (cap_user_time).
bool thread_uses_user_time();

struct Source {
  uint64_t (*mono)();
  uint64_t (*thread_cpu)();
  uint64_t (*process_cpu)();
};
// Replaces the clocks (nullptr members keep the real one); pass {} to restore all. A test's thread CPU
// clock is always read as is (never switch-checked).
void set_clocks_for_test(const Source& s);

}  // namespace txray::clock
