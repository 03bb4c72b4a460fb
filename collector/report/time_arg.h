// Parses the --since / --until values of `txray report`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace txray::report {

// Accepts unix seconds ("1764410400", "1764410400.5"), ISO 8601 in UTC or with an offset
// ("2026-11-29T10:00:00Z", "2026-11-29 10:00:00.250+02:00", "2026-11-29" = midnight UTC; no zone = UTC)
// and times relative to now_unix_ns ("-15m", "-2h", "-1d", "-30s", "-1w").
// Returns the unix time in ns, or nullopt with *error set.
std::optional<int64_t> parse_time_arg(const std::string& s, int64_t now_unix_ns, std::string* error);

}  // namespace txray::report
