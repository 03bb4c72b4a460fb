// The tree of the transactions of one trace, for `txray show --trace`: a transaction's children are
// the callees its HTTP_CALL steps link to, or transactions whose parent_span_id is its own span id (txid).
#pragma once

#include <vector>

#include "model.h"

namespace txray::show {

struct TraceNode {
  size_t index;  // into the transactions given to trace_order
  int depth;
};

// Depth-first order (callers before their callees, siblings by start time). Transactions whose caller
// is not in the trace are roots; a cycle (corrupt data) cannot loop.
std::vector<TraceNode> trace_order(const std::vector<Transaction>& txs);

}  // namespace txray::show
