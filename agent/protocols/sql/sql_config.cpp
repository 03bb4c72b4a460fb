#include "protocols/sql/sql_config.h"

#include <cstdlib>
#include <cstring>

#include "core/config.h"

namespace txray::sql {
namespace {

bool parse_size(const char* s, size_t lo, size_t hi, size_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = size_t(v);
  return true;
}

}  // namespace

Settings parse_settings(const char* (*get)(const char*)) {
  Settings s;
  if (const char* v = get("TXRAY_SQL"); v && *v) {
    if (!std::strcmp(v, "mask")) s.mode = TextMode::mask;
    else if (!std::strcmp(v, "raw")) s.mode = TextMode::raw;
    else if (!std::strcmp(v, "off")) s.mode = TextMode::off;
    else s.problems += std::string("TXRAY_SQL='") + v + "' is not mask|raw|off (using mask); ";
  }
  else if (const char* r = get("TXRAY_VALUES"); r && !std::strcmp(r, "raw")) {
    s.mode = TextMode::raw;  // the one raw switch (core/redact.h) keeps SQL values too, unless TXRAY_SQL says otherwise
  }
  if (const char* v = get("TXRAY_SQL_MAX_TEXT"); v && *v && !parse_size(v, 64, 65536, &s.max_text))
    s.problems += std::string("TXRAY_SQL_MAX_TEXT='") + v + "' is not a number in 64..65536; ";
  if (const char* v = get("TXRAY_SQL_MAX_BIND"); v && *v && !parse_size(v, 8, 4096, &s.max_bind))
    s.problems += std::string("TXRAY_SQL_MAX_BIND='") + v + "' is not a number in 8..4096; ";
  return s;
}

const Settings& settings() {
  // Never freed: hooks may run during exit.
  static const Settings* s = [] {
    auto* p = new Settings(parse_settings([](const char* k) -> const char* { return std::getenv(k); }));
    if (!p->problems.empty()) debug_log("%s", p->problems.c_str());
    return p;
  }();
  return *s;
}

}  // namespace txray::sql
