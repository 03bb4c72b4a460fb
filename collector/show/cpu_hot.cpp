#include "cpu_hot.h"

#include <cstdio>

#include "frame_name.h"

namespace txray::show {

std::string hot_line(const std::vector<HotFunction>& hot, int64_t row_samples, size_t max) {
  if (hot.empty() || row_samples <= 0) return {};
  size_t n = 0;
  bool one_module = true;
  for (const auto& h : hot) {
    if (n == max || (n > 0 && h.samples * 100 < row_samples)) break;
    one_module &= h.module == hot[0].module;
    ++n;
  }
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const auto& h = hot[i];
    if (i) out += ", ";
    out += names::short_frame_name(h.function);
    if (!one_module && !h.module.empty() && h.function.front() != '[') out += " (" + h.module + ")";
    char pct[16];
    std::snprintf(pct, sizeof pct, " %lld%%", static_cast<long long>((h.samples * 100 + row_samples / 2) / row_samples));
    out += pct;
  }
  if (one_module && !hot[0].module.empty()) out += " (" + hot[0].module + ")";
  return out;
}

}  // namespace txray::show
