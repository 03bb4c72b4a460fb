// The scatter as a grid of pixel cells: each cell counts the normal and the failed dots that fall in
// it. Painting the grid costs the same for 100 dots or 10 million (Tracy's rule: never draw what
// cannot be seen); building it visits only the dots of the visible time range.
#pragma once

#include <cstdint>
#include <vector>

#include "axis.h"
#include "point_set.h"

namespace txray::viewer {

struct DensityCell {
  uint32_t normal = 0;
  uint32_t errors = 0;
  uint8_t app = 0;  // app of the last dot seen in the cell (for colouring per application)
};

class DensityGrid {
 public:
  // Cells of cell_px x cell_px pixels covering the axes' pixel rectangle.
  void build(const PointSet& points, const TimeAxis& tx, const ValueAxis& vy, int cell_px);

  int columns() const { return cols_; }
  int rows() const { return rows_; }
  int cell_px() const { return cell_px_; }
  const DensityCell& at(int col, int row) const { return cells_[static_cast<size_t>(row * cols_ + col)]; }
  uint32_t max_count() const { return max_count_; }
  int64_t dots() const { return dots_; }             // dots counted (inside the time range)
  int64_t clipped_above() const { return clipped_; }  // of which above the top: drawn in the top row

 private:
  std::vector<DensityCell> cells_;
  int cols_ = 0, rows_ = 0, cell_px_ = 1;
  uint32_t max_count_ = 0;
  int64_t dots_ = 0, clipped_ = 0;
};

}  // namespace txray::viewer
