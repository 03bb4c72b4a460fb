#include "protocols/sql/sql_normalizer.h"

#include <vector>

#include "protocols/sql/sql_lexer.h"

namespace txray::sql {
namespace {

bool word_is(const Token& t, std::string_view lower) {
  if (t.kind != TokenKind::word || t.text.size() != lower.size()) return false;
  for (size_t i = 0; i < lower.size(); ++i) {
    unsigned char c = t.text[i];
    if (c >= 'A' && c <= 'Z') c += 32;
    if (c != static_cast<unsigned char>(lower[i])) return false;
  }
  return true;
}

bool is_punct(const Token& t, std::string_view p) { return t.kind == TokenKind::punct && t.text == p; }
bool is_value(const Token& t) { return t.kind == TokenKind::literal || t.kind == TokenKind::param; }

// One token of the normalized stream: literals are already "?", collapsed lists are synthetic.
struct Out {
  TokenKind kind;
  bool space_before;
  std::string_view text;
};

class Normalizer {
 public:
  explicit Normalizer(const std::vector<Token>& t) : t_(t) { out_.reserve(t.size()); }

  std::vector<Out> run() {
    // Multi-row VALUES being shortened: where each first row ends and where to go on after its other
    // rows. Nested (a VALUES inside the first row of another) the inner one is shortened too, so that the
    // masked text shortens to itself.
    std::vector<std::pair<size_t, size_t>> values;  // (last token of the first row, resume index)
    for (size_t i = 0; i < t_.size();) {
      const Token& tok = t_[i];
      if ((word_is(tok, "in") && i + 1 < t_.size() && is_punct(t_[i + 1], "(")) ||
          (word_is(tok, "array") && i + 1 < t_.size() && is_punct(t_[i + 1], "["))) {
        size_t end = value_list_end(i + 2, word_is(tok, "in") ? ")" : "]");
        if (end != npos) {
          emit(tok);
          emit(t_[i + 1]);
          // "?+" as the two tokens it reads as, so that the masked text fingerprints like itself.
          out_.push_back({TokenKind::literal, false, "?"});
          out_.push_back({TokenKind::punct, false, "+"});
          emit(t_[end]);
          i = end + 1;
          continue;
        }
      }
      if (word_is(tok, "values") && i + 1 < t_.size() && is_punct(t_[i + 1], "(")) {
        size_t first_close = group_end(i + 1);
        size_t last_close = first_close;
        while (last_close != npos && last_close + 2 < t_.size() && is_punct(t_[last_close + 1], ",") &&
               is_punct(t_[last_close + 2], "(")) {
          size_t next = group_end(last_close + 2);
          if (next == npos) break;
          last_close = next;
        }
        if (first_close != npos && last_close != first_close) values.push_back({first_close, last_close + 1});
      }
      emit(tok);
      if (!values.empty() && i == values.back().first) {  // end of a first row: skip the other rows
        out_.push_back({TokenKind::punct, false, ","});
        out_.push_back({TokenKind::punct, true, "."});
        out_.push_back({TokenKind::punct, false, "."});
        out_.push_back({TokenKind::punct, false, "."});
        i = values.back().second;
        values.pop_back();
        continue;
      }
      ++i;
    }
    return std::move(out_);
  }

 private:
  static constexpr size_t npos = static_cast<size_t>(-1);

  void emit(const Token& t) {
    out_.push_back({t.kind, t.space_before, t.kind == TokenKind::literal ? std::string_view("?") : t.text});
  }

  // `value (, value)* close` starting at i: the index of `close`, or npos.
  size_t value_list_end(size_t i, std::string_view close) const {
    for (;;) {
      if (i >= t_.size() || !is_value(t_[i])) return npos;
      if (++i >= t_.size()) return npos;
      if (is_punct(t_[i], close)) return i;
      if (!is_punct(t_[i], ",")) return npos;
      ++i;
    }
  }

  // Index of the ')' matching the '(' at i, or npos.
  size_t group_end(size_t i) const {
    int depth = 0;
    for (; i < t_.size(); ++i) {
      if (is_punct(t_[i], "(")) depth++;
      else if (is_punct(t_[i], ")") && --depth == 0) return i;
    }
    return npos;
  }

  const std::vector<Token>& t_;
  std::vector<Out> out_;
};

uint64_t fingerprint_of(const std::vector<Out>& out) {
  uint64_t h = 14695981039346656037ull;
  for (const Out& o : out) {
    for (unsigned char c : o.text) {
      if (o.kind == TokenKind::word && c >= 'A' && c <= 'Z') c += 32;
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0x1f;  // token separator, so "ab" and "a b" differ
    h *= 1099511628211ull;
  }
  return h;
}

std::string_view trim(std::string_view s) {
  auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

void truncate_utf8(std::string& s, size_t max) {
  if (s.size() <= max) return;
  size_t cut = max >= 3 ? max - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a sequence
  s.resize(cut);
  s += "...";
}

std::string mask_error_message(std::string_view msg, TextMode mode) {
  if (mode == TextMode::raw) return std::string(msg);
  // A quote between two letters is the message's own apostrophe ("doesn't"), not a value's quote.
  auto letter = [&](size_t i) {
    unsigned char c = i < msg.size() ? msg[i] : 0;
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  };
  auto quote = [&](size_t i) { return msg[i] == '\'' && !(i > 0 && letter(i - 1) && letter(i + 1)); };
  size_t first = 0;
  while (first < msg.size() && !quote(first)) ++first;
  if (first == msg.size()) return std::string(msg);
  size_t last = msg.size() - 1;
  while (last > first && !quote(last)) --last;
  std::string out(msg.substr(0, first));
  out += '?';
  if (last != first) out += msg.substr(last + 1);  // a lone quote: the rest may be a value, dropped
  return out;
}

Normalized normalize(std::string_view sql, TextMode mode, size_t max_text, Dialect dialect) {
  std::vector<Token> tokens = tokenize(sql, dialect);
  std::vector<Out> out = Normalizer(tokens).run();
  Normalized n;
  n.fingerprint = fingerprint_of(out);
  if (mode == TextMode::off) return n;
  if (mode == TextMode::raw) {
    n.text.assign(trim(sql));
  } else {
    n.text.reserve(sql.size());
    for (const Out& o : out) {
      if (o.space_before && !n.text.empty()) n.text += ' ';
      n.text += o.text;
    }
  }
  truncate_utf8(n.text, max_text);
  return n;
}

}  // namespace txray::sql
