#include "show_format.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace txray::show {

std::string thousands(int64_t v) {
  bool neg = v < 0;
  uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits = std::to_string(u);
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return neg ? "-" + out : out;
}

std::string ms_rounded(int64_t ns) { return thousands((ns + (ns >= 0 ? 500000 : -500000)) / 1000000); }

std::string ms_precise(int64_t ns) {
  bool neg = ns < 0;
  uint64_t u = neg ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  uint64_t us = (u + 500) / 1000;
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03" PRIu64, us % 1000);
  return (neg ? "-" : "") + thousands(static_cast<int64_t>(us / 1000)) + frac;
}

std::string agent_cost(int64_t cost_ns, int64_t elapsed_ns) {
  char amount[32];
  double v = double(cost_ns);
  if (cost_ns < 1000) std::snprintf(amount, sizeof amount, "%lld ns", (long long)cost_ns);
  else if (cost_ns < 100'000) std::snprintf(amount, sizeof amount, "%.1f µs", v / 1e3);
  else if (cost_ns < 1'000'000) std::snprintf(amount, sizeof amount, "%.0f µs", v / 1e3);
  else std::snprintf(amount, sizeof amount, "%.2f ms", v / 1e6);
  char share[32] = "";
  if (elapsed_ns > 0) {
    double pct = 100.0 * v / double(elapsed_ns);
    if (pct < 0.1) std::snprintf(share, sizeof share, " (<0.1%%)");
    else std::snprintf(share, sizeof share, " (%.1f%%)", pct);
  }
  return std::string(amount) + share;
}

std::string ms_elapsed(int64_t ns) {
  if (ns >= 10000000 || ns <= -10000000) return ms_rounded(ns);
  char buf[32];
  bool sub_ms = ns < 1000000 && ns > -1000000;
  std::snprintf(buf, sizeof buf, sub_ms ? "%.3f" : "%.2f", static_cast<double>(ns) / 1e6);
  return buf;
}

namespace {
struct Split {
  std::tm tm;
  int ms;
};
Split split(int64_t unix_ns) {
  time_t secs = static_cast<time_t>(unix_ns / 1000000000);
  int ms = static_cast<int>((unix_ns % 1000000000) / 1000000);
  if (ms < 0) {
    ms += 1000;
    --secs;
  }
  Split s{};
  localtime_r(&secs, &s.tm);
  s.ms = ms;
  return s;
}
}  // namespace

std::string clock_time(int64_t unix_ns) {
  Split s = split(unix_ns);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d %03d", s.tm.tm_hour, s.tm.tm_min, s.tm.tm_sec, s.ms);
  return buf;
}

std::string date_time(int64_t unix_ns) {
  Split s = split(unix_ns);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03d", s.tm.tm_year + 1900, s.tm.tm_mon + 1,
                s.tm.tm_mday, s.tm.tm_hour, s.tm.tm_min, s.tm.tm_sec, s.ms);
  return buf;
}

}  // namespace txray::show
