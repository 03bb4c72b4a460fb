#include "redact.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace txray::ingest {

namespace {

constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// `needle` (lower case) at n[i], ignoring ASCII case.
bool has_at(std::string_view n, size_t i, std::string_view needle) {
  if (n.size() - i < needle.size()) return false;
  for (size_t k = 0; k < needle.size(); ++k)
    if (ascii_lower(n[i + k]) != needle[k]) return false;
  return true;
}

// Bytes at which a word of the default pattern can start (either case), and '%' (a name to decode).
struct StartTable {
  bool at[256] = {};
  constexpr StartTable() {
    for (char c : {'p', 's', 't', 'a', 'c'})
      at[static_cast<unsigned char>(c)] = at[static_cast<unsigned char>(c - 32)] = true;
    at[static_cast<unsigned char>('%')] = true;
  }
};
constexpr StartTable kStarts;

enum class Scan { kNo, kYes, kEncoded };

// kDefaultRedactPattern, searched case-insensitively, without std::regex: one pass over the name that
// looks closer only at the letters a word can start with. std::regex costs about a microsecond per
// short name; this some tens of nanoseconds, and it runs on every attribute key of every batch.
// (Leading dashes need no stripping here: no word starts with one.)
Scan default_scan(std::string_view n, bool decoded = false) {
  for (size_t i = 0; i < n.size(); ++i) {
    if (!kStarts.at[static_cast<unsigned char>(n[i])]) continue;
    // The second letter first: most starts ('p' of "port", 'a' of "addr") end there.
    const char next = i + 1 < n.size() ? ascii_lower(n[i + 1]) : '\0';
    switch (ascii_lower(n[i])) {
      case 'p':
        if (next == 'a' && (has_at(n, i, "password") || has_at(n, i, "passwd"))) return Scan::kYes;
        if (next == 'w' && has_at(n, i, "pwd")) return Scan::kYes;
        break;
      case 's':
        if (next == 'e' && (has_at(n, i, "secret") || has_at(n, i, "session"))) return Scan::kYes;
        if (next == 'i' && has_at(n, i, "signature")) return Scan::kYes;
        break;
      case 't':
        if (next == 'o' && has_at(n, i, "token")) return Scan::kYes;
        break;
      case 'a':
        if (next == 'u' && has_at(n, i, "auth")) return Scan::kYes;
        if (next == 'p' && (has_at(n, i, "apikey") || has_at(n, i, "api_key") || has_at(n, i, "api-key")))
          return Scan::kYes;
        break;
      case 'c':
        if (next == 'o' && has_at(n, i, "code")) return Scan::kYes;
        break;
      case '%':
        if (!decoded) return Scan::kEncoded;
        break;
      default: break;
    }
  }
  return Scan::kNo;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = ascii_lower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// A parameter name as its owner meant it: `api%5Fkey` is `api_key`; `--password` is `password`.
std::string_view normal_name(std::string_view name, std::string* buf) {
  size_t dash = name.find_first_not_of('-');
  name = dash == std::string_view::npos ? std::string_view{} : name.substr(dash);
  if (name.find('%') == std::string_view::npos) return name;
  buf->clear();
  for (size_t i = 0; i < name.size(); ++i) {
    int hi, lo;
    if (name[i] == '%' && i + 2 < name.size() && (hi = hex_digit(name[i + 1])) >= 0 &&
        (lo = hex_digit(name[i + 2])) >= 0) {
      buf->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      buf->push_back(name[i]);
    }
  }
  return *buf;
}

bool is_separator(char c) {
  switch (c) {
    case ' ': case '\t': case '\n': case '\r': case '\f': case '\v': case '&': case '?': case ';': return true;
    default: return false;
  }
}

bool ends_authority(char c) {
  switch (c) {
    case '/': case '?': case '#': case ' ': case '\t': case '\n': case '\r': case '"': case '\'': case '<': case '>':
      return true;
    default: return false;
  }
}

// The names of one mask_batch call. With a user's pattern, the answers are remembered: a batch repeats
// the same attribute keys and parameter names in every transaction, and each regex search costs about
// a microsecond.
class Names {
 public:
  explicit Names(const Redactor& r) : r_(r) {}
  bool secret(std::string_view name) {
    if (r_.is_default()) return r_.secret_name(name);
    for (const auto& [n, s] : memo_)
      if (n == name) return s;
    bool s = r_.secret_name(name);
    if (memo_.size() < 64) memo_.emplace_back(std::string(name), s);
    return s;
  }

 private:
  const Redactor& r_;
  std::vector<std::pair<std::string, bool>> memo_;
};

using Edits = std::vector<std::pair<size_t, size_t>>;

// The ranges of `t` to replace with "?" (merged, in order); `eq`, `at`: whether it holds '=', '@'.
void find_edits_in(std::string_view t, bool eq, bool at, Names& names, Edits* edits) {
  const char* d = t.data();
  const size_t n = t.size();
  if (eq) {
    size_t i = 0;
    while (i < n) {
      while (i < n && is_separator(d[i])) ++i;
      size_t start = i;
      while (i < n && !is_separator(d[i])) ++i;
      std::string_view token(d + start, i - start);
      size_t e = token.find('=');
      if (e == std::string_view::npos || e == 0) continue;
      std::string_view value = token.substr(e + 1);
      if (value.empty() || value == "?") continue;  // nothing to hide, or the agent's mask already
      if (names.secret(token.substr(0, e))) edits->emplace_back(start + e + 1, i);
    }
  }
  if (at) {
    for (size_t p = t.find("://"); p != std::string_view::npos; p = t.find("://", p + 3)) {
      size_t a = p + 3, end = a;
      while (end < n && !ends_authority(d[end])) ++end;
      std::string_view authority = t.substr(a, end - a);
      size_t amp = authority.rfind('@');
      if (amp == std::string_view::npos) continue;
      size_t colon = authority.substr(0, amp).find(':');
      if (colon == std::string_view::npos) continue;  // a user name only: kept
      std::string_view pass = authority.substr(colon + 1, amp - colon - 1);
      if (pass.empty() || pass == "?") continue;
      edits->emplace_back(a + colon + 1, a + amp);
    }
  }
  if (edits->size() < 2) return;
  // A userinfo inside a masked parameter value (`token=http://u:p@h`) is one value, masked once.
  std::sort(edits->begin(), edits->end());
  size_t out = 0;
  for (size_t k = 1; k < edits->size(); ++k) {
    auto& last = (*edits)[out];
    const auto& e = (*edits)[k];
    if (e.first < last.second)
      last.second = std::max(last.second, e.second);
    else
      (*edits)[++out] = e;
  }
  edits->resize(out + 1);
}

// Most texts and values hold neither '=' nor '@' and are left at this first look (two memchr: fewer
// instructions than a loop of both compares even over a 5-byte value).
inline void find_edits(std::string_view t, Names& names, Edits* edits) {
  const bool eq = std::memchr(t.data(), '=', t.size()) != nullptr;
  const bool at = std::memchr(t.data(), '@', t.size()) != nullptr;
  if (eq || at) find_edits_in(t, eq, at, names, edits);
}

// Applies edits found on the text's current value; returns how many.
uint64_t apply_edits(std::string* text, const Edits& edits) {
  if (edits.empty()) return 0;
  std::string out;
  out.reserve(text->size());
  size_t at = 0;
  for (const auto& [b, e] : edits) {
    out.append(*text, at, b - at).push_back('?');
    at = e;
  }
  out.append(*text, at, std::string::npos);
  *text = std::move(out);
  return edits.size();
}

bool masks_text_of(int kind) {
  // SQL texts are statements the agent already masked (literals as `?`); re-parsing them here would turn
  // `t.session_id=s.id` into a different statement. SOCKET, DNS and the rest hold addresses and names.
  return kind == v1::HTTP_CALL || kind == v1::DB_CONNECT || kind == v1::MESSAGE;
}

// Only asks for a field's mutable string when it has something to mask: on an arena message,
// mutable_x() of a field still at its default allocates a string (most steps have no error).
struct Masker {
  Names names;
  std::string* first;
  uint64_t count = 0;
  Edits edits = {};

  void note(uint64_t n, const char* what, std::string_view key = {}) {
    if (n == 0) return;
    if (count == 0 && first && first->empty()) {
      *first = what;
      if (!key.empty()) *first += " '" + std::string(key.substr(0, 64)) + (key.size() > 64 ? "…'" : "'");
    }
    count += n;
  }

  template <typename Mutable>
  uint64_t text(const std::string& value, Mutable&& mut) {
    if (value.empty()) return 0;
    edits.clear();
    find_edits(value, names, &edits);
    return edits.empty() ? 0 : apply_edits(mut(), edits);
  }

  template <typename Repeated>
  void attributes(Repeated* attrs, const char* owner) {
    for (auto& a : *attrs) {
      const std::string& v = a.value();
      if (v.empty() || v == "?") continue;
      if (names.secret(a.key())) {
        a.set_value("?");
        note(1, owner, a.key());
      } else {
        note(text(v, [&] { return a.mutable_value(); }), owner, a.key());
      }
    }
  }
};

}  // namespace

Redactor::Redactor(const std::string& pattern) : pattern_(pattern) {
  try {
    re_.emplace(pattern, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("not a valid regular expression (" + std::string(e.what()) + ")");
  }
  if (std::regex_search(std::string(), *re_))
    throw std::invalid_argument("it matches the empty name, so it would mask every value");
}

std::shared_ptr<const Redactor> Redactor::defaults() {
  static const auto d = std::make_shared<const Redactor>();
  return d;
}

bool Redactor::secret_name(std::string_view name) const {
  if (!re_) {
    Scan s = default_scan(name);
    if (s != Scan::kEncoded) return s == Scan::kYes;
  }
  std::string buf;
  std::string_view n = normal_name(name, &buf);
  if (n.empty()) return false;
  if (!re_) return default_scan(n, true) == Scan::kYes;  // a '%' left now is a literal one
  return std::regex_search(n.begin(), n.end(), *re_);
}

uint64_t Redactor::mask_text(std::string* text) const {
  Names names(*this);
  Edits edits = {};
  find_edits(*text, names, &edits);
  return apply_edits(text, edits);
}

uint64_t Redactor::mask_batch(v1::Batch& b, std::string* first) const {
  Masker m{Names(*this), first};
#define TXRAY_MASK(msg, field, what) m.note(m.text((msg).field(), [&] { return (msg).mutable_##field(); }), what)
  if (b.has_agent()) TXRAY_MASK(*b.mutable_agent(), command_line, "command line");
  for (auto& tx : *b.mutable_transactions()) {
    TXRAY_MASK(tx, name, "transaction name");
    TXRAY_MASK(tx, error, "transaction error");
    m.attributes(tx.mutable_attributes(), "transaction attribute");
    for (auto& s : *tx.mutable_steps()) {
      if (masks_text_of(s.kind())) TXRAY_MASK(s, text, "step text");
      TXRAY_MASK(s, error, "step error");
      m.attributes(s.mutable_attributes(), "step attribute");
    }
    for (auto& sm : *tx.mutable_summary())
      if (masks_text_of(sm.kind())) TXRAY_MASK(sm, text, "summary text");
  }
  for (auto& c : *b.mutable_sampled_out()) TXRAY_MASK(c, name, "sampled-out name");
#undef TXRAY_MASK
  return m.count;
}

}  // namespace txray::ingest
