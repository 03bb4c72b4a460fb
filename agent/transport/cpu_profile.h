// Turns a finished transaction's raw CPU samples (cpu/cpu_sampler.h) into what goes on the wire: per
// row, the samples in its GAP and its hottest functions; for the whole transaction, folded stacks for a
// flame graph. Runs on the agent thread (or the exiting thread at exit), never in a hook.
//
// Attribution: a row's GAP is the time from the previous row to its own start, so a sample taken at
// wall time w (CLOCK_MONOTONIC, read in the handler on the sampled thread itself) belongs to the first
// row whose start is at or after w. The sampled thread is running when the sample is taken, so the
// order of samples and rows is the same on the thread's CPU clock: what lands in a row's GAP is part of
// its CPU_T. Samples after the END row (between END and the timer's disarm) go to END.
//
// A row's hot function is the innermost frame that has a name (zlib's static deflate_slow has none in
// a stripped libz.so.1: its samples name `deflate`, the exported function that called it); a frame with
// no name shows in stacks as "[module]".
#pragma once

#include <cstdint>
#include <string>

namespace txray {
struct Transaction;

namespace cpu {

struct Symbol {
  std::string function;  // empty when the module has no name for the address
  std::string module;    // file name, empty when no module maps it
};

// Resolves one code address; `return_address`: ip is where a call returns to (look up ip - 1).
using Resolver = Symbol (*)(uintptr_t ip, bool return_address, void* ctx);

// Fills t->cpu_profile from t->cpu.samples (which it clears).
void build_profile(Transaction& t, Resolver resolve, void* ctx);

}  // namespace cpu
}  // namespace txray
