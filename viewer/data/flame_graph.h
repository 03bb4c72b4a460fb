// A flame graph of one transaction's CPU samples (its folded stacks, root first): frames merged into a
// tree, laid out on [0, 1] by sample counts, children sorted by name (the usual flame graph order).
// Plain data, no Qt: ui/flame_view.* paints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "types.h"

namespace txray::viewer {

struct FlameBox {
  std::string name;      // the frame ("all" for the root)
  int64_t samples = 0;   // samples at or under this frame
  int depth = 0;         // 0 = the root
  double x0 = 0, x1 = 0; // share of the root's width, [0, 1]
};

// Boxes in depth-first order (parents before children). Boxes narrower than min_width are left out with
// everything under them (the view never draws what cannot be seen).
std::vector<FlameBox> flame_layout(const std::vector<CpuStack>& stacks, double min_width = 0.0);

// The hot functions of a row as lines: "62%  deflate  (libz.so.1)  31 samples"; "" when it has none.
std::string hot_functions_text(const Step& s, bool full = false);  // short names unless `full` (tooltip)

}  // namespace txray::viewer
