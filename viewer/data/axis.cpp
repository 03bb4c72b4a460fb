#include "axis.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace txray::viewer {

TimeAxis::TimeAxis(int64_t t0, int64_t t1, double x0, double x1)
    : t0_(t0), t1_(std::max(t1, t0 + 1)), x0_(x0), x1_(std::max(x1, x0 + 1)) {}

double TimeAxis::to_x(int64_t t) const {
  return x0_ + static_cast<double>(t - t0_) * (x1_ - x0_) / static_cast<double>(t1_ - t0_);
}

int64_t TimeAxis::to_time(double x) const {
  return t0_ + static_cast<int64_t>(std::llround((x - x0_) * static_cast<double>(t1_ - t0_) / (x1_ - x0_)));
}

TimeAxis TimeAxis::zoomed(double x, double factor) const {
  const int64_t at = to_time(x);
  const double span = std::max(1e6, static_cast<double>(t1_ - t0_) * factor);  // never below 1 ms
  const double left = (x - x0_) / (x1_ - x0_);
  const int64_t t0 = at - static_cast<int64_t>(span * left);
  return TimeAxis(t0, t0 + static_cast<int64_t>(span), x0_, x1_);
}

TimeAxis TimeAxis::panned(double dx) const {
  const int64_t dt = static_cast<int64_t>(dx * static_cast<double>(t1_ - t0_) / (x1_ - x0_));
  return TimeAxis(t0_ - dt, t1_ - dt, x0_, x1_);
}

ValueAxis::ValueAxis(int64_t v0, int64_t v1, double y_bottom, double y_top, bool log)
    : v0_(log ? std::max<int64_t>(v0, 1000) : v0), yb_(y_bottom), yt_(y_top), log_(log) {
  v1_ = std::max(v1, v0_ + 1);
  if (yb_ <= yt_) yb_ = yt_ + 1;
}

double ValueAxis::norm(int64_t v) const {
  if (log_) {
    const double lv = std::log(static_cast<double>(std::max(v, v0_)));
    return (lv - std::log(static_cast<double>(v0_))) /
           (std::log(static_cast<double>(v1_)) - std::log(static_cast<double>(v0_)));
  }
  return static_cast<double>(v - v0_) / static_cast<double>(v1_ - v0_);
}

double ValueAxis::to_y(int64_t v) const { return yb_ - norm(v) * (yb_ - yt_); }

int64_t ValueAxis::to_value(double y) const {
  const double n = (yb_ - y) / (yb_ - yt_);
  if (log_) {
    const double l0 = std::log(static_cast<double>(v0_)), l1 = std::log(static_cast<double>(v1_));
    return static_cast<int64_t>(std::llround(std::exp(l0 + n * (l1 - l0))));
  }
  return v0_ + static_cast<int64_t>(std::llround(n * static_cast<double>(v1_ - v0_)));
}

ValueAxis ValueAxis::zoomed(double factor) const {
  // Zooms the top of the range, keeping the bottom: response times start at the axis' floor.
  const int64_t v1 = std::max<int64_t>(v0_ + 1000, static_cast<int64_t>(static_cast<double>(v1_) * factor));
  return ValueAxis(v0_, v1, yb_, yt_, log_);
}

namespace {

std::string clock_label(int64_t t_ns, bool seconds) {
  const std::time_t secs = static_cast<std::time_t>(t_ns / 1000000000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, seconds ? "%H:%M:%S" : "%H:%M", &tm);
  return buf;
}

std::string duration_label(int64_t ns) {
  char buf[32];
  const double ms = static_cast<double>(ns) / 1e6;
  if (ms >= 1000)
    std::snprintf(buf, sizeof buf, "%g s", ms / 1000);
  else
    std::snprintf(buf, sizeof buf, "%g ms", ms);
  return buf;
}

}  // namespace

std::vector<Tick> time_ticks(int64_t t0, int64_t t1, int max_ticks) {
  static const int64_t kSteps[] = {
      1000000LL,        10000000LL,        100000000LL,      1000000000LL,      5000000000LL,
      10000000000LL,    30000000000LL,     60000000000LL,    300000000000LL,    600000000000LL,
      1800000000000LL,  3600000000000LL,   10800000000000LL, 21600000000000LL,  43200000000000LL,
      86400000000000LL, 604800000000000LL};
  std::vector<Tick> ticks;
  if (t1 <= t0 || max_ticks < 1) return ticks;
  int64_t step = kSteps[std::size(kSteps) - 1];
  for (int64_t s : kSteps)
    if ((t1 - t0) / s <= max_ticks) {
      step = s;
      break;
    }
  // Align to the local clock so that ticks fall on round minutes/hours.
  const std::time_t secs = static_cast<std::time_t>(t0 / 1000000000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  const int64_t offset = static_cast<int64_t>(tm.tm_gmtoff) * 1000000000LL;
  int64_t t = ((t0 + offset) / step) * step - offset;
  if (t < t0) t += step;
  for (; t <= t1; t += step) {
    std::string label = clock_label(t, step < 60000000000LL);
    if (step < 1000000000LL) {
      char ms[8];
      std::snprintf(ms, sizeof ms, ".%03lld", static_cast<long long>((t / 1000000) % 1000));
      label += ms;
    }
    ticks.push_back({t, label});
  }
  return ticks;
}

std::vector<Tick> value_ticks(int64_t v0, int64_t v1, bool log, int max_ticks) {
  std::vector<Tick> ticks;
  if (v1 <= v0 || max_ticks < 1) return ticks;
  if (log) {
    for (int64_t v = 1000; v <= v1 && v > 0; v *= 10)  // decades from 1 µs
      if (v >= v0) ticks.push_back({v, duration_label(v)});
    return ticks;
  }
  const double raw = static_cast<double>(v1 - v0) / max_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  const auto s = std::max<int64_t>(1, static_cast<int64_t>(step));
  for (int64_t v = ((v0 + s - 1) / s) * s; v <= v1; v += s) ticks.push_back({v, duration_label(v)});
  return ticks;
}

}  // namespace txray::viewer
