#include "density_grid.h"

#include <algorithm>
#include <cmath>

namespace txray::viewer {

void DensityGrid::build(const PointSet& points, const TimeAxis& tx, const ValueAxis& vy, int cell_px) {
  cell_px_ = std::max(1, cell_px);
  const double width = tx.x1() - tx.x0(), height = vy.y_bottom() - vy.y_top();
  cols_ = std::max(1, static_cast<int>(std::ceil(width / cell_px_)));
  rows_ = std::max(1, static_cast<int>(std::ceil(height / cell_px_)));
  cells_.assign(static_cast<size_t>(cols_) * static_cast<size_t>(rows_), DensityCell{});
  max_count_ = 0;
  dots_ = clipped_ = 0;

  auto [first, last] = points.range(tx.t0(), tx.t1());
  const auto& pts = points.points();
  const double inv_cell = 1.0 / cell_px_;
  // x in cells = (end - t0) * x_scale: one multiply a dot instead of TimeAxis::to_x's divide.
  const double x_scale = (tx.x1() - tx.x0()) / static_cast<double>(tx.t1() - tx.t0()) * inv_cell;
  const int64_t t0 = tx.t0();
  for (size_t i = first; i < last; ++i) {
    const TxPoint& p = pts[i];
    const int col = std::clamp(static_cast<int>(static_cast<double>(p.end_ns - t0) * x_scale), 0, cols_ - 1);
    const double y = vy.to_y(p.elapsed_ns) - vy.y_top();
    if (y < 0) ++clipped_;
    const int row = std::clamp(static_cast<int>(y * inv_cell), 0, rows_ - 1);
    DensityCell& c = cells_[static_cast<size_t>(row * cols_ + col)];
    if (p.error)
      ++c.errors;
    else
      ++c.normal;
    c.app = p.app;
    max_count_ = std::max(max_count_, c.normal + c.errors);
    ++dots_;
  }
}

}  // namespace txray::viewer
