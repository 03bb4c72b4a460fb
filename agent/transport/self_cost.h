// The agent's own cost, per transaction: what the agent spent in each request, as an estimate
// the profile carries (Transaction.agent_cost_ns on the wire).
//
// Two parts (docs/agent.md, "The agent's own cost"):
// - host threads: counts the transaction already holds (real rows, folded steps, followed reads/writes of
//   its connection, SOCKET rows' own system calls) times unit costs *calibrated* once at start-up on the
//   agent thread, by running the agent's own code (a private HttpConn fed a request head and a response,
//   the recorder adding rows to a private transaction, the follow path of a read/write on a private fd
//   slot) in short loops timed with the thread CPU clock (medians of five repetitions, a few ms in all);
// - the agent thread: its CPU time around the work of each batch (encode, send, free) divided by the
//   batch's transactions, measured as it goes (two clock reads per batch) and carried to the next batch's
//   transactions; the calibrated encode cost until the first batch is measured.
// Nothing here runs on a host thread: the host's hot path only increments Transaction::io_calls.
#pragma once

#include <cstdint>

namespace txray {
struct Transaction;
}

namespace txray::selfcost {

// Unit costs in ns (AgentCostUnits on the wire); all 0 until calibrate() ran.
struct Units {
  double tx_ns = 0;         // host side of one inbound HTTP request: head read, begin, START/END rows, response write, end, ring
  double row_ns = 0;        // one more real row (a recorder add: two clock reads, the step)
  double folded_ns = 0;     // one step folded past the step limit (no CPU clock read)
  double io_ns = 0;         // the follow path of one read/write on a followed connection (fd slot, guard)
  double syscall_ns = 0;    // one system call the agent makes itself inside a hook (connect: two)
  double encode_tx_ns = 0;  // agent thread: encoding and freeing a START/END transaction (until measured)
  double encode_row_ns = 0; // agent thread: encoding one more row
  double cpu_clock_ns = 0;  // one CLOCK_THREAD_CPUTIME_ID read (for the record: the price the issue compares with)
  // The units above are timed with every CPU clock read a system call. What one switch-checked read
  // (cpu/clock.h) saves instead, in a request: the calibration's requests timed both ways, the
  // difference per read (0 where this thread cannot switch-check). A transaction's reads that did not
  // take the system call (Transaction::cpu_clock_syscalls) are priced that much lower. Not on the wire.
  double fast_read_saving_ns = 0;
  uint64_t calibration_ns = 0;  // CPU time the calibration itself took
  bool valid() const { return tx_ns > 0; }
};

// Runs the calibration on the calling thread (the agent thread, before its first batch), once per
// process: a forked child keeps its parent's units. Bounded: a few ms of CPU.
void calibrate();
const Units& units();

// The host-thread part of t's cost (ns), from its counts and the units; 0 when not calibrated.
uint64_t host_estimate(const Transaction& t);

// The calibrated agent-thread cost of t (encoding it, freeing it). The Sender scales it by what it
// measured on the batches before (see Sender::send), so that the shares add up to the agent thread's work.
double agent_thread_weight(const Transaction& t);

// For tests: sets the units (and counts them as calibrated: calibrate() keeps them).
void set_units_for_test(const Units& u);
// For tests: forgets the units and the calibration, so that the next calibrate() runs (tests that set
// units must not decide what a later calibration test sees: gtest_shuffle runs them in any order).
void reset_for_test();

}  // namespace txray::selfcost
