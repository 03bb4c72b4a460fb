// Whether a system call the agent makes and its host may not could kill the host (docs/reliability.md,
// "Under a seccomp filter"). A seccomp filter decides per system call what happens: allow, fail with an
// errno (Docker's and Podman's default profiles refuse perf_event_open with EPERM: the agent falls back),
// or kill the process — what a systemd unit's SystemCallFilter= does to a call outside its list unless
// SystemCallErrorNumber= is set (perf_event_open is not in @system-service). The agent then must not
// make the call at all: it asks a vfork()ed child to make it first. Only under a filter
// (/proc/self/status "Seccomp: 2", or prctl(PR_GET_SECCOMP) without /proc); without one, nothing is
// spent. The answer is kept for the process (filters are inherited and never removed).
#pragma once

#include <string>

namespace txray::seccomp {

// perf_event_open (the perf sampler's probe and events, the switch-checked clock's page): true when it
// may be called (no filter, or a filter that allows it or fails it with an errno). Safe to call from
// any thread; the first call may take ~100 us (a vfork and a wait) under a filter, later ones nothing.
bool perf_event_open_safe();
// Why not, for the status line ("" while safe).
std::string why_not();

}  // namespace txray::seccomp
