#include "protocols/sql/sql_lexer.h"

#include <array>
#include <cstddef>

namespace txray::sql {
namespace {

bool is_ident_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
bool is_ident_char(unsigned char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '$'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    unsigned char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x += 32;
    if (y >= 'A' && y <= 'Z') y += 32;
    if (x != y) return false;
  }
  return true;
}

// Keywords after which a '-' or '+' in front of a number is a sign, not a binary operator.
bool is_sign_keyword(std::string_view w) {
  static constexpr std::array<std::string_view, 27> k = {
      "select", "where", "and", "or", "not", "by", "then", "else", "when", "return", "values", "set",
      "limit", "offset", "in", "is", "like", "between", "case", "on", "having", "default", "returning",
      "any", "all", "some", "interval"};
  for (auto kw : k)
    if (ieq(w, kw)) return true;
  return false;
}

class Lexer {
 public:
  Lexer(std::string_view s, Dialect d)
      : s_(s), mysql_(d != Dialect::standard), backslash_(d == Dialect::mysql) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    out.reserve(s_.size() / 4 + 4);
    bool space = false;
    while (i_ < s_.size()) {
      unsigned char c = s_[i_];
      if (is_space(c)) { ++i_; space = true; continue; }
      if (c == '-' && peek(1) == '-') { skip_line_comment(); space = true; continue; }
      if (c == '#' && mysql_) { skip_line_comment(); space = true; continue; }
      if (c == '/' && peek(1) == '*') { skip_block_comment(); space = true; continue; }
      size_t start = i_;
      TokenKind kind = scan(out);
      out.push_back({kind, space, s_.substr(start, i_ - start)});
      space = false;
    }
    return out;
  }

 private:
  unsigned char peek(size_t ahead) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : 0; }

  void skip_line_comment() {
    while (i_ < s_.size() && s_[i_] != '\n') ++i_;
  }

  // PostgreSQL block comments nest; SQLite's do not, but nesting only matters for text that contains
  // "/*" inside a comment, where treating it as nested hides at worst more of a comment.
  void skip_block_comment() {
    int depth = 0;
    while (i_ < s_.size()) {
      if (s_[i_] == '/' && peek(1) == '*') { depth++; i_ += 2; continue; }
      if (s_[i_] == '*' && peek(1) == '/') {
        i_ += 2;
        if (--depth == 0) return;
        continue;
      }
      ++i_;
    }
  }

  // Scans one token starting at i_, leaves i_ after it, returns its kind.
  TokenKind scan(const std::vector<Token>& prev) {
    unsigned char c = s_[i_];
    if (c == '\'') { scan_quoted('\'', backslash_); return TokenKind::literal; }
    if (c == '"' && mysql_) { scan_quoted('"', backslash_); return TokenKind::literal; }
    if (c == '"') { scan_quoted('"', false); return TokenKind::quoted_ident; }
    if (c == '`') { scan_quoted('`', false); return TokenKind::quoted_ident; }
    if (is_digit(c) || (c == '.' && is_digit(peek(1)))) { scan_number(); return TokenKind::literal; }
    if ((c == '-' || c == '+') && (is_digit(peek(1)) || (peek(1) == '.' && is_digit(peek(2)))) &&
        sign_allowed(prev)) {
      ++i_;
      scan_number();
      return TokenKind::literal;
    }
    if (is_ident_start(c)) return scan_word();
    if (c == '$') return scan_dollar();
    if (c == '?') {
      ++i_;
      while (is_digit(peek(0))) ++i_;
      return TokenKind::param;
    }
    if (c == ':' && peek(1) == ':') { i_ += 2; return TokenKind::punct; }
    if ((c == ':' || c == '@') && is_ident_start(peek(1))) {
      ++i_;
      while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
      return TokenKind::param;
    }
    ++i_;
    return TokenKind::punct;
  }

  bool sign_allowed(const std::vector<Token>& prev) const {
    if (prev.empty()) return true;
    const Token& t = prev.back();
    switch (t.kind) {
      case TokenKind::punct: return t.text != ")" && t.text != "]";
      case TokenKind::word: return is_sign_keyword(t.text);
      default: return false;
    }
  }

  // A quoted run; `q` doubled inside is an escaped quote; with `backslash`, '\' escapes the next byte.
  // Unterminated: runs to the end.
  void scan_quoted(char q, bool backslash) {
    ++i_;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (backslash && c == '\\') { i_ += 2; continue; }
      if (c == q) {
        if (peek(1) == static_cast<unsigned char>(q)) { i_ += 2; continue; }
        ++i_;
        return;
      }
      ++i_;
    }
    i_ = s_.size();
  }

  void scan_number() {
    if (s_[i_] == '0' && (peek(1) == 'x' || peek(1) == 'X' || peek(1) == 'b' || peek(1) == 'B' ||
                          peek(1) == 'o' || peek(1) == 'O')) {
      i_ += 2;
    } else {
      while (is_digit(peek(0)) || peek(0) == '_') ++i_;
      if (peek(0) == '.') {
        ++i_;
        while (is_digit(peek(0)) || peek(0) == '_') ++i_;
      }
      if ((peek(0) == 'e' || peek(0) == 'E') &&
          (is_digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && is_digit(peek(2))))) {
        i_ += 2;
      }
    }
    // Digits of any base, and whatever identifier characters stick to the number (1st, 0xFFg): masking
    // more than the literal is harmless, masking less would leak it.
    while (i_ < s_.size() && is_ident_char(s_[i_]) && s_[i_] != '$') ++i_;
  }

  TokenKind scan_word() {
    size_t start = i_;
    while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
    std::string_view w = s_.substr(start, i_ - start);
    if (peek(0) == '\'' && w.size() == 1) {
      char p = w[0] | 0x20;
      if (p == 'e') { scan_quoted('\'', true); return TokenKind::literal; }   // E'it\'s'
      if (p == 'n') { scan_quoted('\'', backslash_); return TokenKind::literal; }  // N'..' is a string
      if (p == 'x' || p == 'b') { scan_quoted('\'', false); return TokenKind::literal; }
    }
    if (peek(0) == '&' && peek(1) == '\'' && w.size() == 1 && (w[0] | 0x20) == 'u') {  // U&'d\0061t'
      ++i_;
      scan_quoted('\'', false);
      return TokenKind::literal;
    }
    return TokenKind::word;
  }

  // $1 (PostgreSQL parameter), $$..$$ and $tag$..$tag$ (dollar quoting), $name (SQLite parameter).
  TokenKind scan_dollar() {
    size_t start = i_;
    if (is_digit(peek(1))) {
      ++i_;
      while (is_digit(peek(0))) ++i_;
      return TokenKind::param;
    }
    size_t j = i_ + 1;
    while (j < s_.size() && is_ident_char(s_[j]) && s_[j] != '$') ++j;
    if (j < s_.size() && s_[j] == '$' && (j == i_ + 1 || !is_digit(s_[i_ + 1]))) {
      std::string_view tag = s_.substr(start, j - start + 1);
      size_t end = s_.find(tag, j + 1);
      i_ = end == std::string_view::npos ? s_.size() : end + tag.size();
      return TokenKind::literal;
    }
    if (j > i_ + 1) {
      i_ = j;
      return TokenKind::param;
    }
    ++i_;
    return TokenKind::punct;
  }

  std::string_view s_;
  bool mysql_;      // '#' comments, ".." strings
  bool backslash_;  // '\' escapes inside '..' and ".."
  size_t i_ = 0;
};

}  // namespace

std::vector<Token> tokenize(std::string_view sql, Dialect dialect) { return Lexer(sql, dialect).run(); }

}  // namespace txray::sql
