#include "stats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace txray::report {

int64_t nearest_rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  // The epsilon keeps exact products (e.g. 0.95 * 20 = 19) from rounding up to the next rank.
  auto rank = static_cast<size_t>(std::ceil(q / 100.0 * n - 1e-9));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

Percentiles percentiles(std::vector<int64_t>& v) {
  std::sort(v.begin(), v.end());
  Percentiles p;
  p.p50 = nearest_rank(v, 50);
  p.p90 = nearest_rank(v, 90);
  p.p95 = nearest_rank(v, 95);
  p.p99 = nearest_rank(v, 99);
  p.max = v.empty() ? 0 : v.back();
  return p;
}

const std::vector<int64_t>& bucket_edges() {
  static const std::vector<int64_t> edges = [] {
    std::vector<int64_t> e{0};
    for (int64_t decade = 100'000; decade <= 100'000'000'000; decade *= 10)  // 100 us .. 100 s
      for (int64_t m : {1, 2, 5}) e.push_back(decade * m);
    e.push_back(1'000'000'000'000);  // 1000 s
    return e;
  }();
  return edges;
}

std::vector<Bucket> histogram(const std::vector<int64_t>& values) {
  const auto& edges = bucket_edges();
  std::vector<Bucket> b(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) {
    b[i].lo_ns = edges[i];
    b[i].hi_ns = i + 1 < edges.size() ? edges[i + 1] : std::numeric_limits<int64_t>::max();
  }
  for (int64_t v : values) {
    auto it = std::upper_bound(edges.begin(), edges.end(), std::max<int64_t>(v, 0));
    b[static_cast<size_t>(it - edges.begin()) - 1].count++;
  }
  size_t first = 0, last = b.size();
  while (first < last && b[first].count == 0) ++first;
  while (last > first && b[last - 1].count == 0) --last;
  return {b.begin() + static_cast<long>(first), b.begin() + static_cast<long>(last)};
}

std::string hex16(int64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(static_cast<uint64_t>(v)));
  return buf;
}

HostPath split_url(std::string_view t) {
  // An optional leading HTTP method ("GET http://…").
  if (auto sp = t.find(' '); sp != std::string_view::npos && sp < 10 && t.find("://") > sp)
    t.remove_prefix(sp + 1);
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  // gRPC calls (HTTP/2 streams the agent marks, text "grpc://authority/package.Service/Method") keep
  // their scheme in the host, so that tables name them as gRPC.
  bool grpc = t.substr(0, 7) == "grpc://";
  if (auto s = t.find("://"); s != std::string_view::npos) t.remove_prefix(s + 3);
  auto end = t.find_first_of("?#");
  if (end != std::string_view::npos) t = t.substr(0, end);
  HostPath hp;
  auto slash = t.find('/');
  std::string_view host = t.substr(0, slash);
  if (auto at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);  // user:pw@
  hp.host.assign(host);
  for (auto& c : hp.host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (grpc) hp.host.insert(0, "grpc://");
  hp.path = slash == std::string_view::npos ? "/" : std::string(t.substr(slash));
  return hp;
}

}  // namespace txray::report
