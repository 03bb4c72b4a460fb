#include "point_set.h"

#include <algorithm>
#include <cmath>

namespace txray::viewer {

namespace {
bool by_end(const TxPoint& a, const TxPoint& b) { return a.end_ns < b.end_ns || (a.end_ns == b.end_ns && a.id < b.id); }
}  // namespace

void PointSet::append(const PointBatch& batch) {
  apps_ = batch.apps;
  names_ = batch.names;
  last_id_ = std::max(last_id_, batch.last_id);
  if (batch.shed >= 0) shed_ = batch.shed;
  for (const auto& [kind, n] : batch.unattributed) {
    unattributed_[kind] += n;
    unattributed_steps_ += n;
  }
  if (batch.points.empty()) return;
  const size_t old = points_.size();
  points_.insert(points_.end(), batch.points.begin(), batch.points.end());
  auto mid = points_.begin() + static_cast<std::ptrdiff_t>(old);
  if (!std::is_sorted(mid, points_.end(), by_end)) std::sort(mid, points_.end(), by_end);
  // Only the held dots that end after the batch's first one take part in the merge (in live mode a few
  // hundred, not the million before them).
  if (old > 0 && by_end(*mid, *(mid - 1))) {
    auto from = std::upper_bound(points_.begin(), mid, *mid, by_end);
    std::inplace_merge(from, mid, points_.end(), by_end);
  }
}

void PointSet::clear() {
  points_.clear();
  apps_.clear();
  names_.clear();
  last_id_ = 0;
  unattributed_.clear();
  unattributed_steps_ = 0;
  shed_ = 0;
}

std::pair<size_t, size_t> PointSet::range(int64_t t0, int64_t t1) const {
  auto lo = std::lower_bound(points_.begin(), points_.end(), t0,
                             [](const TxPoint& p, int64_t t) { return p.end_ns < t; });
  auto hi = std::upper_bound(lo, points_.end(), t1, [](int64_t t, const TxPoint& p) { return t < p.end_ns; });
  return {static_cast<size_t>(lo - points_.begin()), static_cast<size_t>(hi - points_.begin())};
}

BoxStats PointSet::box_stats(const Box& box) const {
  BoxStats s;
  auto [first, last] = range(box.t0, box.t1);
  for (size_t i = first; i < last; ++i) {
    const auto& p = points_[i];
    if (p.elapsed_ns < box.e0 || p.elapsed_ns > box.e1) continue;
    if (s.count == 0 || p.id < s.min_id) s.min_id = p.id;
    if (s.count == 0 || p.id > s.max_id) s.max_id = p.id;
    ++s.count;
  }
  return s;
}

std::vector<int64_t> PointSet::ids_in(const Box& box) const {
  std::vector<int64_t> ids;
  auto [first, last] = range(box.t0, box.t1);
  for (size_t i = first; i < last; ++i)
    if (points_[i].elapsed_ns >= box.e0 && points_[i].elapsed_ns <= box.e1) ids.push_back(points_[i].id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

int64_t PointSet::nth_slowest(const Box& box, size_t n) const {
  auto [first, last] = range(box.t0, box.t1);
  std::vector<int64_t> v;
  for (size_t i = first; i < last; ++i)
    if (points_[i].elapsed_ns >= box.e0 && points_[i].elapsed_ns <= box.e1) v.push_back(points_[i].elapsed_ns);
  if (n == 0 || v.size() <= n) return box.e0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n - 1), v.end(), std::greater<>());
  return v[n - 1];
}

int64_t PointSet::max_elapsed(int64_t t0, int64_t t1) const {
  auto [first, last] = range(t0, t1);
  int64_t m = 0;
  for (size_t i = first; i < last; ++i) m = std::max(m, points_[i].elapsed_ns);
  return m;
}

int64_t PointSet::quantile_elapsed(int64_t t0, int64_t t1, double q, size_t sample) const {
  auto [first, last] = range(t0, t1);
  if (first >= last) return 0;
  const size_t n = last - first, stride = std::max<size_t>(1, n / std::max<size_t>(1, sample));
  std::vector<int64_t> v;
  v.reserve(n / stride + 1);
  for (size_t i = first; i < last; i += stride) v.push_back(points_[i].elapsed_ns);
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::optional<TxPoint> PointSet::nearest(const TimeAxis& tx, const ValueAxis& vy, double x, double y,
                                         double radius) const {
  auto [first, last] = range(tx.to_time(x - radius), tx.to_time(x + radius));
  std::optional<TxPoint> best;
  double best_d = radius * radius;
  for (size_t i = first; i < last; ++i) {
    const auto& p = points_[i];
    const double dx = tx.to_x(p.end_ns) - x, dy = vy.to_y(p.elapsed_ns) - y;
    const double d = dx * dx + dy * dy;
    // Ties go to the slower dot: the one a user hovering over a cluster most likely means.
    if (d < best_d || (d == best_d && best && p.elapsed_ns > best->elapsed_ns)) {
      best_d = d;
      best = p;
    }
  }
  return best;
}

}  // namespace txray::viewer
