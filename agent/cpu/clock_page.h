// The switch-checked CPU clock's page where the perf sampler does not run (cpu/clock.h): with
// TXRAY_CPU_SAMPLES=0 or the signal sampler, a thread that has begun kClockPageAfter transactions opens
// a counting task-clock event on itself (no samples, no signal, no data pages) and maps only its first
// page, the perf_event_mmap_page whose sequence the kernel rewrites at each sched-in. The descriptor is
// closed at once (the mapping keeps the event); the thread unmaps the page when it exits; a forked
// child does not have it (the kernel maps it VM_DONTCOPY). Threads that serve fewer transactions (a
// short-lived forked child's one request) never pay the open. One attempt per thread; a refusal (a
// seccomp profile, perf_event_paranoid) keeps the system call and is not retried by other threads.
#pragma once

#include <cstdint>

namespace txray {
struct Config;

namespace clock::page {

constexpr uint32_t kClockPageAfter = 16;

// At start: whether threads may open their own page (the switch-checked clock on, the perf sampler not
// running). Without a call, never.
void configure(const Config& c, bool perf_sampler_runs);
// Host thread, at each transaction it begins (before START's clock read).
void on_begin();
// Pages opened and refused so far (the status line).
uint64_t opened();
void after_fork_child();

}  // namespace clock::page
}  // namespace txray
