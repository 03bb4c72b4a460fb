// Optional marks for txray, from the samples. The agent's C API is looked up at run time, so the samples
// link nothing of txray and behave the same when the agent is not preloaded (every call is a no-op).
//
// - tx_begin / tx_end: a transaction for work that is not an HTTP request (the raw-TCP channel of the
//   orders sample: one binary call = one transaction named after the method).
// - mark: a MESSAGE row in the current transaction. A row's GAP and CPU_T are measured since the
//   previous row, so a mark placed right after a piece of work makes that work's cost its own row (the
//   relay marks "gunzip" after decompressing, which is how its profile shows the CPU-bound gap).
#pragma once

#include <string>

namespace txray::samples::trace {

void tx_begin(const std::string& name);
void tx_end(int status, const std::string& error = {});
void mark(const std::string& text);

}  // namespace txray::samples::trace
