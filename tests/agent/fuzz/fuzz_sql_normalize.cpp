// libFuzzer target: the SQL lexer and normalizer (agent/protocols/sql/sql_lexer.cpp, sql_normalizer.cpp) run in
// the host on every statement text the program prepares, in each dialect (standard, mysql,
// mysql_no_backslash: the first byte picks it), and mask_error_message on MySQL error messages. Besides
// never crashing or reading past the text, they promise:
//  - tokens are non-empty, in order, inside the text, and only whitespace or comments lie between them;
//  - the masked text is at most max_text bytes, cut on a UTF-8 boundary with "..." when it was cut;
//  - the fingerprint is the same whatever the text mode;
//  - no literal survives masking: the masked text re-tokenizes without a single literal;
//  - masking is idempotent and the masked text fingerprints like the statement it came from (an
//    application that logs the masked text and runs it again lands on the same row);
//  - raw mode keeps the text (trimmed, cut).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocols/sql/sql_lexer.h"
#include "protocols/sql/sql_normalizer.h"

using namespace txray::sql;

namespace {

[[noreturn]] void fail(const char* what, const std::string& a, const std::string& b = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%s]\n  [%s]\n", what, a.c_str(), b.c_str());
  abort();
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// What lies between two tokens: whitespace, "--" line comments, "/* */" block comments (nesting, or
// unterminated at the end of the text).
bool only_gaps(std::string_view s, bool mysql) {
  size_t i = 0;
  while (i < s.size()) {
    if (is_space(s[i])) { ++i; continue; }
    if (s.substr(i, 2) == "--" || (mysql && s[i] == '#')) {
      size_t nl = s.find('\n', i);
      if (nl == std::string_view::npos) return true;
      i = nl + 1;
      continue;
    }
    if (s.substr(i, 2) == "/*") {
      int depth = 0;
      while (i < s.size()) {
        if (s.substr(i, 2) == "/*") { ++depth; i += 2; continue; }
        if (s.substr(i, 2) == "*/") { i += 2; if (--depth == 0) break; continue; }
        ++i;
      }
      continue;
    }
    return false;
  }
  return true;
}

// A text cut to fit: a prefix of the full text plus "...", never ending inside a UTF-8 sequence (the first
// byte dropped is not a continuation byte).
bool good_cut(const std::string& cut, std::string_view full) {
  if (cut.size() < 3 || cut.compare(cut.size() - 3, 3, "...") != 0) return false;
  std::string_view prefix(cut.data(), cut.size() - 3);
  if (prefix.size() >= full.size() || full.substr(0, prefix.size()) != prefix) return false;
  return (static_cast<unsigned char>(full[prefix.size()]) & 0xC0) != 0x80 || prefix.empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  size_t max_text = in.ConsumeIntegralInRange<size_t>(64, 512);  // sql_config.h allows 64..65536
  auto dialect = static_cast<Dialect>(in.ConsumeIntegralInRange<int>(0, 2));
  bool mysql = dialect != Dialect::standard;
  std::string rest = in.ConsumeRemainingBytesAsString();
  std::vector<char> buf(rest.begin(), rest.end());  // exact size: ASan sees any read past the end
  std::string_view sql(buf.data(), buf.size());

  std::vector<Token> tokens = tokenize(sql, dialect);
  size_t pos = 0;
  for (const Token& t : tokens) {
    if (t.text.empty()) fail("empty token", rest);
    if (t.text.data() < sql.data() + pos || t.text.data() + t.text.size() > sql.data() + sql.size())
      fail("token out of order or outside the text", rest);
    size_t at = size_t(t.text.data() - sql.data());
    std::string_view gap = sql.substr(pos, at - pos);
    if (!only_gaps(gap, mysql)) fail("bytes lost between tokens", rest, std::string(gap));
    if (t.space_before != !gap.empty())
      fail("space_before disagrees with the gap", rest, std::string(gap));
    pos = at + t.text.size();
  }
  if (!only_gaps(sql.substr(pos), mysql)) fail("bytes lost after the last token", rest);

  Normalized masked = normalize(sql, TextMode::mask, max_text, dialect);
  Normalized raw = normalize(sql, TextMode::raw, max_text, dialect);
  Normalized off = normalize(sql, TextMode::off, max_text, dialect);
  if (masked.fingerprint != raw.fingerprint || masked.fingerprint != off.fingerprint)
    fail("fingerprint depends on the text mode", rest);
  if (!off.text.empty()) fail("off mode kept text", rest);
  // Raw mode: the text itself, trimmed (cut like the masked one).
  std::string_view trimmed = sql;
  while (!trimmed.empty() && is_space(trimmed.front())) trimmed.remove_prefix(1);
  while (!trimmed.empty() && is_space(trimmed.back())) trimmed.remove_suffix(1);
  if (trimmed.size() <= max_text ? raw.text != trimmed : !good_cut(raw.text, trimmed))
    fail("raw text is not the statement (cut right)", rest, raw.text);

  // Masked text: computed from the same statement with room for all of it.
  Normalized whole = normalize(sql, TextMode::mask, 1 << 20, dialect);
  if (whole.text.size() <= max_text ? whole.text != masked.text : !good_cut(masked.text, whole.text))
    fail("masked text is not the whole masked text (cut right)", whole.text, masked.text);
  if (masked.text.size() > max_text || raw.text.size() > max_text) fail("text longer than max_text", rest);
  for (const Token& t : tokenize(whole.text, dialect))
    if (t.kind == TokenKind::literal) fail("a literal survived masking", rest, whole.text);
  Normalized again = normalize(whole.text, TextMode::mask, 1 << 20, dialect);
  if (again.text != whole.text) fail("masking is not idempotent", whole.text, again.text);
  if (again.fingerprint != whole.fingerprint) fail("masked text fingerprints differently", rest, whole.text);

  // An error message: nothing between the outer quotes survives, the parts outside them do.
  std::string em = mask_error_message(sql, TextMode::mask);
  if (em.size() > sql.size() + 1) fail("masked error message grew", rest, em);
  if (mask_error_message(sql, TextMode::raw) != sql) fail("raw error message changed", rest);
  return 0;
}
