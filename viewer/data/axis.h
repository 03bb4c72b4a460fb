// Mapping between data and pixels for the scatter: x = end time (unix ns), y = response time (ns) on a
// linear or log scale. Pure arithmetic, tested alone (tests/viewer/test_axis.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace txray::viewer {

// [t0, t1] (unix ns) onto [x0, x1] (pixels, x0 < x1).
class TimeAxis {
 public:
  TimeAxis() = default;
  TimeAxis(int64_t t0, int64_t t1, double x0, double x1);
  double to_x(int64_t t) const;
  int64_t to_time(double x) const;
  int64_t t0() const { return t0_; }
  int64_t t1() const { return t1_; }
  double x0() const { return x0_; }
  double x1() const { return x1_; }
  // Zoom by `factor` (< 1 = in) keeping the time under pixel x in place; pan by dx pixels.
  TimeAxis zoomed(double x, double factor) const;
  TimeAxis panned(double dx) const;

 private:
  int64_t t0_ = 0, t1_ = 1;
  double x0_ = 0, x1_ = 1;
};

// [v0, v1] (ns, response time) onto [y_bottom, y_top] (pixels; y_bottom > y_top as on screen).
// On a log scale v0 is at least 1 µs and values at or below v0 map to the bottom; on a linear scale v0
// may be negative (a margin below 0 ms).
class ValueAxis {
 public:
  ValueAxis() = default;
  ValueAxis(int64_t v0, int64_t v1, double y_bottom, double y_top, bool log);
  double to_y(int64_t v) const;
  int64_t to_value(double y) const;
  int64_t v0() const { return v0_; }
  int64_t v1() const { return v1_; }
  bool log() const { return log_; }
  double y_bottom() const { return yb_; }
  double y_top() const { return yt_; }
  ValueAxis zoomed(double factor) const;  // scales the top, keeps the floor

 private:
  double norm(int64_t v) const;  // 0 at v0, 1 at v1
  int64_t v0_ = 0, v1_ = 1;
  double yb_ = 1, yt_ = 0;
  bool log_ = false;
};

struct Tick {
  int64_t value;
  std::string label;
};
// Round tick positions for a time range (at most about max_ticks), labelled HH:MM[:SS] in local time.
std::vector<Tick> time_ticks(int64_t t0, int64_t t1, int max_ticks);
// Round ticks for response times (1/2/5 steps, or decades on a log scale), labelled in ms or s.
std::vector<Tick> value_ticks(int64_t v0, int64_t v1, bool log, int max_ticks);

}  // namespace txray::viewer
