#include "time_arg.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>

namespace txray::report {
namespace {

bool digits(const std::string& s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

std::optional<int64_t> parse_iso(const std::string& s) {
  int Y, M, D, h = 0, m = 0, sec = 0;
  if (!digits(s, 0, 4, &Y) || s.size() < 10 || s[4] != '-' || !digits(s, 5, 2, &M) || s[7] != '-' ||
      !digits(s, 8, 2, &D))
    return std::nullopt;
  size_t p = 10;
  int64_t frac_ns = 0, offset_s = 0;
  if (p < s.size() && (s[p] == 'T' || s[p] == ' ')) {
    if (!digits(s, p + 1, 2, &h) || p + 3 >= s.size() || s[p + 3] != ':' || !digits(s, p + 4, 2, &m))
      return std::nullopt;
    p += 6;
    if (p < s.size() && s[p] == ':') {
      if (!digits(s, p + 1, 2, &sec)) return std::nullopt;
      p += 3;
      if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
        int64_t scale = 100'000'000;
        ++p;
        size_t start = p;
        for (; p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])); ++p, scale /= 10)
          frac_ns += (s[p] - '0') * scale;
        if (p == start) return std::nullopt;
      }
    }
  }
  if (p < s.size()) {
    if (s[p] == 'Z' || s[p] == 'z') {
      ++p;
    } else if (s[p] == '+' || s[p] == '-') {
      int oh, om = 0;
      if (!digits(s, p + 1, 2, &oh)) return std::nullopt;
      size_t q = p + 3;
      if (q < s.size() && s[q] == ':') ++q;
      if (q < s.size() && !digits(s, q, 2, &om)) return std::nullopt;
      if (q < s.size()) q += 2;
      offset_s = (s[p] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
      p = q;
    }
  }
  if (p != s.size() || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  const int64_t t = timegm(&tm);
  return (t - offset_s) * 1'000'000'000 + frac_ns;
}

}  // namespace

std::optional<int64_t> parse_time_arg(const std::string& s, int64_t now_unix_ns, std::string* error) {
  auto fail = [&] {
    *error = "bad time '" + s + "': use unix seconds, ISO 8601 (2026-11-29T10:00:00Z) or -15m / -2h / -1d";
    return std::nullopt;
  };
  if (s.empty()) return fail();
  // Relative: -<number><unit>
  if (s[0] == '-' && s.size() >= 3 && std::isalpha(static_cast<unsigned char>(s.back()))) {
    double n = 0;
    auto [ptr, ec] = std::from_chars(s.data() + 1, s.data() + s.size() - 1, n);
    if (ec != std::errc() || ptr != s.data() + s.size() - 1 || n < 0) return fail();
    double unit;
    switch (s.back()) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      case 'w': unit = 7 * 86400; break;
      default: return fail();
    }
    return now_unix_ns - static_cast<int64_t>(std::llround(n * unit * 1e9));
  }
  // Unix seconds (with optional fraction).
  if (std::isdigit(static_cast<unsigned char>(s[0])) && s.find('-') == std::string::npos) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) return fail();
    return static_cast<int64_t>(std::llround(v * 1e9));
  }
  if (auto t = parse_iso(s)) return t;
  return fail();
}

}  // namespace txray::report
