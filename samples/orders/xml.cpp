#include "xml.h"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace txray::samples::orders::xml {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Element document() {
    skip_misc();
    Element root = element();
    skip_misc();
    if (i_ != s_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("XML: " + what + " at offset " + std::to_string(i_));
  }
  bool starts(std::string_view p) const { return s_.substr(i_, p.size()) == p; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  void skip_past(std::string_view end) {
    size_t p = s_.find(end, i_);
    if (p == std::string_view::npos) fail("unterminated construct");
    i_ = p + end.size();
  }
  // Whitespace, the XML declaration, processing instructions and comments.
  void skip_misc() {
    for (;;) {
      skip_ws();
      if (starts("<?")) skip_past("?>");
      else if (starts("<!--")) skip_past("-->");
      else return;
    }
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '_' || c == '-' || c == '.';
  }
  std::string name() {
    size_t b = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    if (b == i_) fail("expected a name");
    return std::string(s_.substr(b, i_ - b));
  }
  static std::string local(const std::string& qname) {
    size_t c = qname.find(':');
    return c == std::string::npos ? qname : qname.substr(c + 1);
  }
  void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x110000) {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      fail("character reference out of range");
    }
  }
  // Character data up to `stop`, with entities decoded.
  void chars(std::string& out, char stop) {
    while (i_ < s_.size() && s_[i_] != stop) {
      char c = s_[i_];
      if (c == '<' && stop != '<') fail("'<' in attribute value");
      if (c != '&') {
        out += c;
        ++i_;
        continue;
      }
      size_t semi = s_.find(';', i_);
      if (semi == std::string_view::npos || semi - i_ > 10) fail("bad entity");
      std::string_view ent = s_.substr(i_ + 1, semi - i_ - 1);
      if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "amp") out += '&';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (ent.size() > 1 && ent[0] == '#') {
        bool hex = ent[1] == 'x';
        std::string digits(ent.substr(hex ? 2 : 1));
        char* end = nullptr;
        unsigned long cp = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
        if (digits.empty() || *end) fail("bad character reference");
        append_utf8(out, cp);
      } else {
        fail("unknown entity");
      }
      i_ = semi + 1;
    }
  }
  Element element() {
    if (!starts("<")) fail("expected '<'");
    ++i_;
    std::string qname = name();
    Element e;
    e.name = local(qname);
    for (;;) {
      skip_ws();
      if (starts("/>")) {
        i_ += 2;
        return e;
      }
      if (starts(">")) {
        ++i_;
        break;
      }
      std::string an = name();
      skip_ws();
      if (!starts("=")) fail("expected '='");
      ++i_;
      skip_ws();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("expected a quoted value");
      char q = s_[i_++];
      std::string v;
      chars(v, q);
      if (i_ >= s_.size()) fail("unterminated attribute value");
      ++i_;
      e.attributes.emplace_back(std::move(an), std::move(v));
    }
    for (;;) {
      chars(e.text, '<');
      if (i_ >= s_.size()) fail("unterminated element " + qname);
      if (starts("</")) {
        i_ += 2;
        if (name() != qname) fail("mismatched end tag for " + qname);
        skip_ws();
        if (!starts(">")) fail("expected '>'");
        ++i_;
        return e;
      }
      if (starts("<!--")) {
        skip_past("-->");
        continue;
      }
      e.children.push_back(element());
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

const Element* Element::find(std::string_view local) const {
  for (const auto& c : children) {
    if (c.name == local) return &c;
    if (const Element* d = c.find(local)) return d;
  }
  return nullptr;
}

const Element* Element::child(std::string_view local) const {
  for (const auto& c : children)
    if (c.name == local) return &c;
  return nullptr;
}

Element parse(std::string_view doc) { return Parser(doc).document(); }

namespace {
void write_element(std::string& out, const Element& e, int depth) {
  out.append(static_cast<size_t>(depth) * 2, ' ');
  out += '<';
  out += e.name;
  for (const auto& [k, v] : e.attributes) {
    out += ' ';
    out += k;
    out += "=\"";
    append_escaped(out, v);
    out += '"';
  }
  if (e.children.empty() && e.text.empty()) {
    out += "/>\n";
    return;
  }
  out += '>';
  append_escaped(out, e.text);
  if (!e.children.empty()) {
    out += '\n';
    for (const auto& c : e.children) write_element(out, c, depth + 1);
    out.append(static_cast<size_t>(depth) * 2, ' ');
  }
  out += "</";
  out += e.name;
  out += ">\n";
}
}  // namespace

std::string write(const Element& root) {
  std::string out = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";
  write_element(out, root, 0);
  return out;
}

void append_escaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
}

}  // namespace txray::samples::orders::xml
