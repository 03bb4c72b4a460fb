// SQL settings of the agent, read once from the environment (docs/sql.md):
//   TXRAY_SQL           mask (default) | raw | off   — what text and bind values are recorded
//   TXRAY_SQL_MAX_TEXT  bytes of statement text kept (default 4096, 64..65536)
//   TXRAY_SQL_MAX_BIND  bytes kept per bind value in raw mode (default 64, 8..4096)
// A bad value keeps the default and is reported through debug_log (TXRAY_DEBUG=1).
#pragma once

#include <cstddef>
#include <string>

#include "protocols/sql/sql_normalizer.h"

namespace txray::sql {

struct Settings {
  TextMode mode = TextMode::mask;
  size_t max_text = kDefaultMaxText;
  size_t max_bind = 64;
  std::string problems;  // what could not be parsed
};

Settings parse_settings(const char* (*get)(const char*));

// The process-wide settings: parsed from the environment on first use.
const Settings& settings();

}  // namespace txray::sql
