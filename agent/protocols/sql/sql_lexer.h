// A forgiving SQL tokenizer for the dialects txray traces (SQLite, PostgreSQL, MySQL/MariaDB). It never
// fails: input it
// does not understand becomes punctuation, and an unterminated literal runs to the end of the input (so
// that an unterminated string is masked whole rather than leaked). Comments and whitespace are not
// tokens; a token only remembers whether something separated it from the previous one.
//
// Pure code, no allocation besides the output vector; used once per prepared statement (see
// sql_normalizer.h), never per execution.
#pragma once

#include <string_view>
#include <vector>

namespace txray::sql {

// What differs between the dialects, as far as finding literals goes:
//  standard            (SQLite, PostgreSQL) '..' with '' escapes, "..", `..` identifiers, -- and /* */
//                      comments;
//  mysql               (MySQL/MariaDB) '..' and ".." are strings in which '\' escapes the next byte (and
//                      the quote doubled escapes it too), `..` identifiers, '#' starts a line comment;
//  mysql_no_backslash  the same with sql_mode NO_BACKSLASH_ESCAPES ('\' is an ordinary character).
// A ".." masked as a string under ANSI_QUOTES (where it is an identifier) hides a name, never a value.
enum class Dialect : unsigned char { standard, mysql, mysql_no_backslash };

enum class TokenKind : unsigned char {
  word,          // unquoted identifier or keyword: SELECT, users, t1, _x, café
  quoted_ident,  // "Name" (standard), `name`
  literal,       // 'text', "text" (mysql), E'..', X'..', B'..', N'..', U&'..', $tag$..$tag$, 42, -1.5e3, 0x1F
  param,         // ?, ?3, $1, :name, @name, $name
  punct,         // one operator or punctuation character, or "::"
};

struct Token {
  TokenKind kind;
  bool space_before;  // whitespace or a comment came before this token
  std::string_view text;
};

// Splits `sql` into tokens (views into `sql`). A leading sign is folded into a numeric literal when it
// cannot be a binary operator (after an operator, '(', ',', the start, or a keyword such as WHERE).
std::vector<Token> tokenize(std::string_view sql, Dialect dialect = Dialect::standard);

}  // namespace txray::sql
