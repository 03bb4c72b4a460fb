// --redact-pattern REGEX and --no-redact, shared by `txray collect` and `txray export` (both decode agent
// batches and mask values that look like credentials: collector/ingest/redact.h, docs/security.md).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "redact.h"

namespace txray::cli {

struct RedactArgs {
  std::optional<std::string> pattern;
  bool off = false;
};

inline void add_redact_options(CLI::App& app, RedactArgs& r) {
  auto* p = app.add_option("--redact-pattern", r.pattern,
                           "mask the values of parameters and attributes whose name matches this regex (ECMAScript, "
                           "case-insensitive, searched in the name) instead of the default " +
                               std::string(ingest::kDefaultRedactPattern) +
                               "; an empty pattern is refused (use --no-redact)");
  auto* off = app.add_flag("--no-redact", r.off,
                           "keep values that look like credentials as the agents sent them (said at start-up and "
                           "on every status line)");
  p->excludes(off);
}

// The policy the options ask for (nullptr: none), or false with the reason printed.
inline bool redact_policy(const RedactArgs& r, const char* cmd, std::shared_ptr<const ingest::Redactor>* out) {
  if (r.off) {
    *out = nullptr;
    return true;
  }
  if (!r.pattern) {
    *out = ingest::Redactor::defaults();
    return true;
  }
  if (r.pattern->empty()) {
    // An empty regex matches every name; read as "no pattern" it would silently keep every secret.
    std::fprintf(stderr, "%s: --redact-pattern '' is refused: to keep values as sent, say --no-redact\n", cmd);
    return false;
  }
  try {
    *out = std::make_shared<const ingest::Redactor>(*r.pattern);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: --redact-pattern '%s': %s\n", cmd, r.pattern->c_str(), e.what());
    return false;
  }
  return true;
}

}  // namespace txray::cli
