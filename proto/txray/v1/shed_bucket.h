// Response-time buckets of ShedCount (txray.proto): the one formula the agent (head sampling) and the
// collector (load shedding, readers) share. Header-only, no dependencies: the agent includes it too.
//
// Bucket 0 holds everything below 1,024 ns. Above, four buckets per power of two: for e = floor(log2(ns))
// and s = the two bits below the top one, b = (e - 10) * 4 + s + 1, covering
// [(4 + s) << (e - 2), (5 + s) << (e - 2)): at most 25% wide, so a bucket's mean (stored with its count)
// is within 25% of every value in it.
#pragma once

#include <cstdint>

namespace txray::v1 {

inline constexpr uint32_t kShedBuckets = 217;  // b = 0 .. 216 (e up to 63)

inline uint32_t shed_bucket(uint64_t ns) {
  if (ns < 1024) return 0;
  const int e = 63 - __builtin_clzll(ns);
  const uint32_t s = static_cast<uint32_t>(ns >> (e - 2)) & 3u;
  return static_cast<uint32_t>(e - 10) * 4 + s + 1;
}

// [lo, hi) of bucket b (hi of the last bucket saturates at UINT64_MAX).
inline uint64_t shed_bucket_lo(uint32_t b) {
  if (b == 0) return 0;
  const uint32_t e = 10 + (b - 1) / 4, s = (b - 1) % 4;
  return static_cast<uint64_t>(4 + s) << (e - 2);
}
inline uint64_t shed_bucket_hi(uint32_t b) {
  if (b == 0) return 1024;
  if (b + 1 >= kShedBuckets) return UINT64_MAX;
  return shed_bucket_lo(b + 1);
}

// The minute a transaction that ended at `end_unix_ns` is counted in.
inline uint64_t shed_minute(uint64_t end_unix_ns) { return end_unix_ns / 60'000'000'000ull * 60'000'000'000ull; }

}  // namespace txray::v1
