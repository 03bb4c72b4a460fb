// CPU samples in the text views: a row's hottest functions in one line.
#pragma once

#include <string>
#include <vector>

#include "model.h"

namespace txray::show {

// "deflate 95%, crc32_z 3% (libz.so.1)" for a row with CPU samples; "" for one without. Functions of
// one module share one "(module)"; percentages are of the row's samples. At most `max` functions, and
// none under 1%.
std::string hot_line(const std::vector<HotFunction>& hot, int64_t row_samples, size_t max = 3);

}  // namespace txray::show
