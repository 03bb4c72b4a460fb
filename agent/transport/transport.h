// The transport: finished transactions leave the host's threads through a bounded lock-free queue and
// one agent thread (started on first use, all signals blocked) encodes them in batches and sends them
// with a ZeroMQ PUSH socket. The host never blocks and never makes a system call here: a full queue
// drops the transaction and counts it; a refused send (collector away) counts it as send_failed.
#pragma once

#include <cstdint>
#include <string>

#include "../core/transaction.h"
#include "identity.h"

namespace txray::transport {

// Creates the queue (capacity from the configuration) and installs enqueue() as the core's sink.
void init(const Identity& id);

// Hands a finished transaction to the agent thread (starting it if needed); drops it when the queue is
// full. Takes ownership.
void enqueue(Transaction* t);

// Process exit: lets the agent thread send what is queued and close its socket, waiting at most
// `timeout_ms`. Returns false when it did not finish in time (the process exits anyway).
bool flush(uint32_t timeout_ms);

// In a forked child: forgets the parent's agent thread, queue and ZeroMQ objects (without touching
// them), resets the counters, takes a new identity; the child's own thread starts on first use.
void after_fork_child(const Identity& id);

// Process-mode transaction names use the identity's argv_name.
const Identity& identity();

}  // namespace txray::transport
