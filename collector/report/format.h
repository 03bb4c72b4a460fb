// Text formatting shared by the renderers and the dominant-cost descriptions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace txray::report {

double to_ms(int64_t ns);                 // exact division, for JSON
std::string fmt_ms(int64_t ns);           // "0.125", "12.50", "812.3", "2,938.0" (no unit)
std::string fmt_count(int64_t n);         // "1,234,567"
std::string fmt_pct(double fraction);     // 0.1234 → "12.3%"
// The agent's own cost: "850 ns", "2.1 µs", "123 µs", "1.23 ms"; with its share of a response time:
// "2.1 µs (0.3%)", a share under 0.1% as "(<0.1%)".
std::string fmt_agent_cost(double ns);
std::string fmt_agent_cost(double ns, double share);
std::string fmt_time(int64_t unix_ns);    // "2026-11-29 10:00:00.123Z" (UTC)
std::string fmt_duration_ms_label(int64_t ns);  // histogram edges: "100 µs", "2 ms", "1 s"
std::string shorten(std::string_view s, size_t max_chars);  // UTF-8 safe, "…" when cut; newlines → space
std::string html_escape(std::string_view s);
std::string csv_field(std::string_view s);  // RFC 4180 quoting when needed
// Counts per kind, most first (ties by name): "HTTP_CALL 1,234, SOCKET 2".
std::string fmt_kind_counts(const std::map<std::string, int64_t>& counts);

}  // namespace txray::report
