// A small XML reader and writer helpers, enough for SOAP envelopes: elements, attributes, text, the five
// predefined entities and numeric character references, comments and the XML declaration. Namespaces
// are not resolved: elements are known by their local name (the part after the prefix).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace txray::samples::orders::xml {

struct Element {
  std::string name;  // local name when parsed; the name to write (prefix allowed) when built
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string text;  // concatenated character data directly inside this element
  std::vector<Element> children;
  // First child (at any depth, depth-first) with this local name; nullptr when none.
  const Element* find(std::string_view local) const;
  const Element* child(std::string_view local) const;  // direct child only
};

// Parses a whole document; throws std::runtime_error with the offset on malformed input.
Element parse(std::string_view doc);

// Appends `s` with &, <, >, " escaped.
void append_escaped(std::string& out, std::string_view s);

// Serializes a tree, two spaces of indentation per level, after an XML declaration. Element and
// attribute names are written as given (so they may carry a prefix: "soap:Envelope").
std::string write(const Element& root);

}  // namespace txray::samples::orders::xml
