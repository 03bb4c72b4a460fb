// The process's unattributed container: where steps go that the attribution rules (attribution.h)
// cannot give to a request — a call made while an event loop had several requests in flight, the work
// of a thread that serves no request. They are kept, not dropped: the container is a transaction of
// kind "unattributed" that every thread may record into (its lock is taken), with flat rows (calls of
// different threads do not nest). The agent thread sends what it holds about once a second (rotate())
// and at exit; the container itself lives as long as the process, so a step reference into it never
// dangles (a rotated row is simply stale).
#pragma once

#include <cstdint>

#include "core/transaction.h"

namespace txray::unattr {

// The container, created on first use; nullptr outside http mode or out of memory.
Transaction* container();
// Whether t is the container (no dereference).
bool is_container(const Transaction* t);

// Agent thread: when the container holds rows, sends them as one transaction (kind "unattributed") and
// starts it again. Waits while a call in it is still open, for at most ~10 s unless `final` (exit).
void rotate(bool final);

// Host thread, before a step goes into the container: when it is (nearly) full, sends it now rather
// than folding the steps that follow (a busy event loop without hints fills it within a second). Never
// waits for the lock.
void rotate_if_full();

// In a forked child: the parent's container (whose lock a parent thread may hold) is not used.
void after_fork_child();

}  // namespace txray::unattr
