#include "frame_name.h"

#include <array>
#include <utility>

namespace txray::names {
namespace {

// Longest first: a later entry may be a part of an earlier one. Both spellings of the closing
// brackets: GCC's demangler writes "> >", LLVM's ">>".
constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kSpellings{{
    {"std::__cxx11::", "std::"},
    {"std::__1::", "std::"},
    {"std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"},
    {"std::basic_string<char, std::char_traits<char>, std::allocator<char>>", "std::string"},
    {"std::basic_string_view<char, std::char_traits<char> >", "std::string_view"},
    {"std::basic_string_view<char, std::char_traits<char>>", "std::string_view"},
    {"std::basic_ostream<char, std::char_traits<char> >", "std::ostream"},
    {"std::basic_ostream<char, std::char_traits<char>>", "std::ostream"},
    {"std::basic_istream<char, std::char_traits<char> >", "std::istream"},
    {"std::basic_istream<char, std::char_traits<char>>", "std::istream"},
    {"std::basic_ostringstream<char, std::char_traits<char>, std::allocator<char> >", "std::ostringstream"},
    {"std::basic_istringstream<char, std::char_traits<char>, std::allocator<char> >", "std::istringstream"},
    {"std::basic_stringstream<char, std::char_traits<char>, std::allocator<char> >", "std::stringstream"},
    {"std::basic_string<char>", "std::string"},
}};

// Operator names, longest first so that "<<=" is not read as "<<" and "=".
constexpr std::array<std::string_view, 40> kOperators{
    "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "==", "!=", "+=", "-=", "*=",
    "/=",  "%=",  "^=",  "&=",  "|=", "++", "--", "&&", "||", "<",  ">",  "=",  "+",  "-",  "*",  "/",
    "%",   "^",   "&",   "|",   "~",  "!",  ",",  "\"\""};

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// Index just past the bracket that closes the one at `open` (`<`/`(`), counting both kinds; npos when
// unbalanced. Operators inside template arguments ("operator<") are rare enough to ignore here: an
// unbalanced name is returned unchanged by the caller.
size_t closing(std::string_view s, size_t open) {
  int angle = 0, paren = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++angle;
    else if (c == '>' && !(i > 0 && s[i - 1] == '-')) --angle;
    else if (c == '(') ++paren;
    else if (c == ')') --paren;
    if (angle < 0 || paren < 0) return std::string_view::npos;
    if (angle == 0 && paren == 0) return i + 1;
  }
  return std::string_view::npos;
}

}  // namespace

std::string std_spellings_shortened(std::string_view full) {
  std::string s(full);
  for (const auto& [from, to] : kSpellings) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  }
  return s;
}

std::string short_frame_name(std::string_view full) {
  const std::string s = std_spellings_shortened(full);
  std::string out;
  out.reserve(s.size());
  bool name_ended = false;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const std::string_view before(out);
    // An operator's own name ("operator<<", "operator()", "operator->") is copied as it is; a template
    // argument list right after it ("operator<< <char>", "operator==<char>") is still collapsed.
    bool after_operator = false;
    if (ends_with(before, "operator")) {
      for (std::string_view op : kOperators) {
        if (std::string_view(s).substr(i, op.size()) == op) {
          out += op;
          i += op.size();
          after_operator = true;
          break;
        }
      }
      if (after_operator) {
        if (i + 1 < s.size() && s[i] == ' ' && s[i + 1] == '<') out += s[i++];
        if (i < s.size() && s[i] == '<') {
          const size_t end = closing(s, i);
          if (end == std::string::npos) return std::string(full);
          out += "<\xe2\x80\xa6>";
          i = end;
        }
        name_ended = true;  // its parameter list follows
        continue;
      }
    }
    const bool after_name = std::exchange(name_ended, false) || (!before.empty() && (ident_char(before.back()) || before.back() == '>' ||
                                                before.back() == ')' || before.back() == ']'));
    if ((c == '<' || c == '(') && after_name) {
      const size_t end = closing(s, i);
      if (end == std::string::npos) return std::string(full);  // not a name this understands
      if (c == '(' && end == i + 2) {
        out += "()";
      } else {
        out += c == '<' ? "<\xe2\x80\xa6>" : "(\xe2\x80\xa6)";
      }
      i = end;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace txray::names
