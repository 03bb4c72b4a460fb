// Number and time formatting of the X-View profile: milliseconds with thousands separators.
#pragma once

#include <cstdint>
#include <string>

namespace txray::show {

std::string thousands(int64_t v);            // 1234567 -> "1,234,567"
std::string ms_rounded(int64_t ns);          // nanoseconds -> whole milliseconds, "2,942"
std::string ms_precise(int64_t ns);          // "2,942.123" (three decimals)
std::string ms_elapsed(int64_t ns);          // [x ms] of calls: "0.042" below 1 ms, "3.51" below 10, else "2,942"
std::string clock_time(int64_t unix_ns);     // local "HH:MM:SS mmm", the START_TIME column
std::string date_time(int64_t unix_ns);      // local "YYYY-MM-DD HH:MM:SS.mmm"
// The agent's own cost of a transaction and its share of the response time: "2.1 µs (0.3%)";
// "850 ns", "123 µs", "1.23 ms"; a share under 0.1% is "<0.1%".
std::string agent_cost(int64_t cost_ns, int64_t elapsed_ns);

}  // namespace txray::show
