// Latency statistics for the sample clients and drivers (nearest-rank percentiles).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace txray::samples {

struct LatencyStats {
  size_t count = 0;
  double mean_ms = 0, p50_ms = 0, p95_ms = 0, max_ms = 0;
};

// Nearest-rank percentile p (0 < p <= 100) of sorted values: the smallest value with at least p% of
// the values at or below it.
inline int64_t nearest_rank(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

inline LatencyStats latency_stats(std::vector<int64_t> ns) {
  LatencyStats s;
  s.count = ns.size();
  if (ns.empty()) return s;
  std::sort(ns.begin(), ns.end());
  double sum = 0;
  for (auto v : ns) sum += static_cast<double>(v);
  s.mean_ms = sum / static_cast<double>(ns.size()) / 1e6;
  s.p50_ms = static_cast<double>(nearest_rank(ns, 50)) / 1e6;
  s.p95_ms = static_cast<double>(nearest_rank(ns, 95)) / 1e6;
  s.max_ms = static_cast<double>(ns.back()) / 1e6;
  return s;
}

}  // namespace txray::samples
