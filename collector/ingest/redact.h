// The collector's second line against secrets: values that still look like credentials when a batch
// arrives — an older or foreign agent, or one in raw mode — are masked on ingest, before the store, the
// OTLP export or the status counters see them. docs/security.md ("What is recorded") lists what is
// masked where; the agent's own policy is the first line.
//
// A value is masked when the NAME it is given under looks like a credential's: a query or `name=value`
// parameter (`password=…`), an attribute key (`token`), a URL's userinfo password (`scheme://user:pass@`).
// Its value becomes `?`, the mask the agent writes for outbound query values (`api_key=?`), so that both
// lines leave the same shape. Names are matched against a pattern, by default
// password|passwd|pwd|secret|token|api[_-]?key|auth|session|signature|code, case-insensitively, anywhere
// in the name (as a regex search), after percent-decoding and without leading dashes (`--password=`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

#include "txray/v1/txray.pb.h"

namespace txray::ingest {

// The default pattern, as a user would write it (the default itself is matched by hand-written code
// that gives the same answers: tests/collector/redact_test.cpp compares them).
inline constexpr const char* kDefaultRedactPattern =
    "password|passwd|pwd|secret|token|api[_-]?key|auth|session|signature|code";

class Redactor {
 public:
  // The default names.
  Redactor() = default;
  // A user's pattern: an ECMAScript regex, searched case-insensitively in each name. Throws
  // std::invalid_argument (with the reason) for a pattern that does not compile, and for one that
  // matches the empty name (it would mask every value: an empty pattern never turns masking off).
  explicit Redactor(const std::string& pattern);

  // The shared default policy (what Limits carries unless told otherwise).
  static std::shared_ptr<const Redactor> defaults();

  const std::string& pattern() const { return pattern_; }
  bool is_default() const { return !re_; }

  // Whether a parameter or attribute name looks like a credential's.
  bool secret_name(std::string_view name) const;

  // Masks, in place, in a free text (a URL, a transaction name, a command line, a message, an error):
  // the values of `name=value` parameters with a secret name — parameters end at white space, `&`, `?`,
  // `;` (so query strings, form bodies, connection strings, `--option=value` arguments are covered) —
  // and the password of each `scheme://user:password@host`. Returns how many values were masked.
  // Texts with neither `=` nor `@` are left at the first look.
  uint64_t mask_text(std::string* text) const;

  // The whole batch: agent command line; transaction names, errors and attributes; step texts of
  // HTTP_CALL, DB_CONNECT and MESSAGE rows (SQL texts are the agent's masked statements and are not
  // re-parsed), step errors and attributes; summary texts of those kinds; sampled-out names.
  // An attribute whose key is a secret name gets `?` whatever its value; other attribute values go
  // through mask_text. Returns how many values were masked; *first, when given and empty, says where the
  // first one was (no value in it).
  uint64_t mask_batch(v1::Batch& batch, std::string* first = nullptr) const;

 private:
  std::string pattern_ = kDefaultRedactPattern;
  std::optional<std::regex> re_;  // none: the default names, by hand
};

}  // namespace txray::ingest
