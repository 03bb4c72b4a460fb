#include "trace_tree.h"

#include <algorithm>
#include <unordered_map>

namespace txray::show {

std::vector<TraceNode> trace_order(const std::vector<Transaction>& txs) {
  std::unordered_map<int64_t, size_t> by_row;      // transactions.id -> index
  std::unordered_map<uint64_t, size_t> by_span;    // span id (txid or an HTTP_CALL's id) -> caller index
  for (size_t i = 0; i < txs.size(); ++i) {
    by_row[txs[i].id] = i;
    by_span.emplace(txs[i].txid, i);
    for (const auto& s : txs[i].steps)
      if (s.kind == "HTTP_CALL" && s.id) by_span.emplace(*s.id, i);
  }
  std::vector<std::vector<size_t>> children(txs.size());
  std::vector<bool> has_parent(txs.size(), false);
  for (size_t i = 0; i < txs.size(); ++i) {
    if (txs[i].parent_span_id == 0) continue;
    auto it = by_span.find(txs[i].parent_span_id);
    if (it == by_span.end() || it->second == i) continue;
    children[it->second].push_back(i);
    has_parent[i] = true;
  }
  auto by_start = [&](size_t a, size_t b) { return txs[a].start_unix_ns < txs[b].start_unix_ns; };
  for (auto& c : children) std::sort(c.begin(), c.end(), by_start);

  std::vector<TraceNode> out;
  std::vector<bool> seen(txs.size(), false);
  // Depth-first with an explicit stack: a trace may be a chain of thousands of calls.
  auto visit = [&](size_t root, int root_depth) {
    std::vector<TraceNode> stack{{root, root_depth}};
    while (!stack.empty()) {
      TraceNode n = stack.back();
      stack.pop_back();
      if (seen[n.index]) continue;
      seen[n.index] = true;
      out.push_back(n);
      for (auto it = children[n.index].rbegin(); it != children[n.index].rend(); ++it)
        stack.push_back({*it, n.depth + 1});
    }
  };
  std::vector<size_t> roots;
  for (size_t i = 0; i < txs.size(); ++i)
    if (!has_parent[i]) roots.push_back(i);
  std::sort(roots.begin(), roots.end(), by_start);
  for (size_t r : roots) visit(r, 0);
  for (size_t i = 0; i < txs.size(); ++i) visit(i, 0);  // members of a cycle, if any
  return out;
}

}  // namespace txray::show
