#include "format.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>
#include <vector>

namespace txray::report {

double to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string fmt_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string fmt_ms(int64_t ns) {
  const double ms = to_ms(ns);
  char buf[64];
  if (ms < 1) std::snprintf(buf, sizeof buf, "%.3f", ms);
  else if (ms < 100) std::snprintf(buf, sizeof buf, "%.2f", ms);
  else {
    // one decimal, thousands separated
    const int64_t tenths = (ns + 50'000) / 100'000;
    return fmt_count(tenths / 10) + "." + std::to_string(tenths % 10);
  }
  return buf;
}

std::string fmt_pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", f * 100.0);
  return buf;
}

std::string fmt_agent_cost(double ns) {
  char buf[32];
  if (ns < 999.5) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 99'950) std::snprintf(buf, sizeof buf, "%.1f µs", ns / 1e3);
  else if (ns < 999'500) std::snprintf(buf, sizeof buf, "%.0f µs", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  return buf;
}

std::string fmt_agent_cost(double ns, double share) {
  char pct[32];
  if (share * 100 < 0.05) std::snprintf(pct, sizeof pct, " (<0.1%%)");
  else std::snprintf(pct, sizeof pct, " (%.1f%%)", share * 100);
  return fmt_agent_cost(ns) + pct;
}

std::string fmt_time(int64_t unix_ns) {
  std::time_t s = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((unix_ns / 1'000'000) % 1000));
  return buf;
}

std::string fmt_duration_ms_label(int64_t ns) {
  if (ns == 0) return "0";
  if (ns < 1'000'000) return std::to_string(ns / 1000) + " µs";
  if (ns < 1'000'000'000) return std::to_string(ns / 1'000'000) + " ms";
  return std::to_string(ns / 1'000'000'000) + " s";
}

std::string shorten(std::string_view s, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {  // the first byte of a code point
      if (chars == max_chars) {
        out += "…";
        return out;
      }
      ++chars;
    }
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : s[i];
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string fmt_kind_counts(const std::map<std::string, int64_t>& counts) {
  std::vector<std::pair<std::string, int64_t>> v(counts.begin(), counts.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [kind, n] : v) out += (out.empty() ? "" : ", ") + kind + " " + fmt_count(n);
  return out;
}

}  // namespace txray::report
