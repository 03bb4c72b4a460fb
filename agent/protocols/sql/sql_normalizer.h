// SQL text for profiles: literal masking and the statement fingerprint.
//
// normalize() turns a statement into what txray records:
//  - text: with TXRAY_SQL=mask (the default) every literal (numbers, signed numbers, strings with ''
//    or E'\'' escapes, X'..'/0x.. hex, B'..' bits, N'..', U&'..', $$..$$ / $tag$..$tag$) becomes '?',
//    `IN (a, b, …)` and `ARRAY[a, b, …]` lists of literals/parameters become `IN (?+)` / `ARRAY[?+]`,
//    a multi-row `VALUES (…), (…), …` keeps its first row and becomes `VALUES (…), ...`, comments are
//    dropped (they can carry values: sqlcommenter tags, ids), and whitespace runs become one space.
//    Identifiers, quoted identifiers, keywords and parameters ($1, ?, ?2, :name, @name, $name) are kept
//    as written. With raw the original text is kept; with off there is no text.
//    The text is cut to `max_text` bytes (on a UTF-8 boundary, "..." appended).
//  - fingerprint: FNV-1a 64 of the masked token stream with unquoted words lower-cased and no
//    whitespace, so statements that differ only in literal values, list lengths, comments, spacing or
//    keyword case share one fingerprint whatever the mode.
//
// Not masked: SQLite's legacy double-quoted strings ("bob" where no such column exists) are identifiers
// to this tokenizer. Cost: linear in the text, one allocation for the tokens and one for the text;
// callers cache the result per prepared statement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocols/sql/sql_lexer.h"

namespace txray::sql {

enum class TextMode : unsigned char { mask, raw, off };

inline constexpr size_t kDefaultMaxText = 4096;

struct Normalized {
  std::string text;
  uint64_t fingerprint = 0;
};

// `dialect` (sql_lexer.h) decides what a literal and a comment are: MySQL/MariaDB clients pass
// Dialect::mysql ('\' escapes, ".." strings, '#' comments).
Normalized normalize(std::string_view sql, TextMode mode = TextMode::mask, size_t max_text = kDefaultMaxText,
                     Dialect dialect = Dialect::standard);

// A server's error message as a SQL row records it. MySQL/MariaDB messages quote the values and the
// statement text that caused them ("Duplicate entry 'bob@x.org' for key 'email'", "… near 'WHERE pw =
// 'hunter2'' at line 1"), with the quotes inside unescaped: unless `mode` is raw, everything from the
// first single quote to the last becomes '?' ("Duplicate entry ?", "… near ? at line 1"); a quote
// between two letters is an apostrophe of the message ("doesn't") and stays.
std::string mask_error_message(std::string_view msg, TextMode mode);

// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence, appending "..." when it cut.
void truncate_utf8(std::string& s, size_t max);

// FNV-1a 64 (the hash the store uses for texts, too).
inline uint64_t fnv1a(std::string_view s, uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace txray::sql
