// All scatter dots in memory, sorted by end time, so that a time range is found with lower_bound (as
// Tracy does) and only its dots are visited. About 32 bytes a dot: 1,000,000 dots take 32 MB.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "axis.h"
#include "types.h"

namespace txray::viewer {

struct BoxStats {
  int64_t count = 0;
  int64_t min_id = 0, max_id = 0;  // id range of the dots inside (for Store::query_box)
};

class PointSet {
 public:
  // Adds a batch (ids after the ones held). Keeps the order by end time even when the batch's end times
  // overlap the ones held (a collector stores a transaction when it ends, give or take a batch).
  void append(const PointBatch& batch);
  void clear();

  const std::vector<TxPoint>& points() const { return points_; }
  size_t size() const { return points_.size(); }
  int64_t last_id() const { return last_id_; }
  int64_t min_end() const { return points_.empty() ? 0 : points_.front().end_ns; }
  int64_t max_end() const { return points_.empty() ? 0 : points_.back().end_ns; }
  const std::vector<std::string>& apps() const { return apps_; }
  const std::vector<std::string>& names() const { return names_; }
  // Steps the agent could not attribute to any request, in the rows loaded so far (no dots: types.h).
  int64_t unattributed_steps() const { return unattributed_steps_; }
  // Transactions counted but not stored (shed or sampled out): no dots, but in the counts.
  int64_t shed() const { return shed_; }
  const KindCounts& unattributed_by_kind() const { return unattributed_; }

  // Index range [first, last) of dots with t0 <= end <= t1.
  std::pair<size_t, size_t> range(int64_t t0, int64_t t1) const;
  BoxStats box_stats(const Box& box) const;
  // The ids of the dots inside box, ascending.
  std::vector<int64_t> ids_in(const Box& box) const;
  // The response time of the n-th slowest dot in `box` (box.e0 when the box holds n dots or fewer): a box
  // raised to it holds about the n slowest dots.
  int64_t nth_slowest(const Box& box, size_t n) const;
  // Largest response time among dots ending in [t0, t1] (0 when none).
  int64_t max_elapsed(int64_t t0, int64_t t1) const;
  // Approximate q-quantile (0..1) of the response times ending in [t0, t1], from an even sample of at
  // most `sample` dots, so its cost does not grow with the range (0 when none).
  int64_t quantile_elapsed(int64_t t0, int64_t t1, double q, size_t sample = 20000) const;
  // The dot nearest to pixel (x, y), within `radius` pixels; nullopt when none.
  std::optional<TxPoint> nearest(const TimeAxis& tx, const ValueAxis& vy, double x, double y, double radius) const;

 private:
  std::vector<TxPoint> points_;
  std::vector<std::string> apps_, names_;
  int64_t last_id_ = 0;
  KindCounts unattributed_;
  int64_t unattributed_steps_ = 0;
  int64_t shed_ = 0;
};

}  // namespace txray::viewer
