// Small pure helpers of the report: percentiles, histogram buckets, id and URL formatting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "report_model.h"

namespace txray::report {

// Nearest-rank percentile of an ascending vector: the ceil(q/100 * n)-th smallest value (rank at
// least 1). Returns 0 for an empty vector. q in (0, 100].
int64_t nearest_rank(const std::vector<int64_t>& sorted, double q);

// Sorts v in place and fills p50/p90/p95/p99/max.
Percentiles percentiles(std::vector<int64_t>& v);

// Log-scale bucket edges in ns: 0, then 1-2-5 steps from 100 us up to 1000 s; the last bucket is open.
const std::vector<int64_t>& bucket_edges();
// Counts values into the buckets and trims empty buckets at both ends (keeps empty ones between).
std::vector<Bucket> histogram(const std::vector<int64_t>& values);

// A 64-bit id as 16 lowercase hex digits (the unsigned view of the stored signed value).
std::string hex16(int64_t v);

// Splits an outbound call URL into host (with port, lower-cased) and path (without query or
// fragment). "GET http://h:8080/a/b?x=1" → {"h:8080", "/a/b"}; a text with no scheme is taken as
// "host/path". gRPC calls keep their scheme: "grpc://h:50051/pkg.Svc/M" → {"grpc://h:50051", "/pkg.Svc/M"}.
struct HostPath {
  std::string host, path;
};
HostPath split_url(std::string_view text);

}  // namespace txray::report
