#include "attributes_json.h"

#include <nlohmann/json.hpp>

namespace txray {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  if (n == 2 && c < 0xc2) return 0;                          // overlong
  if (n == 3 && c == 0xe0 && b(i + 1) < 0xa0) return 0;      // overlong
  if (n == 3 && c == 0xed && b(i + 1) >= 0xa0) return 0;     // surrogate
  if (n == 4 && (c > 0xf4 || (c == 0xf0 && b(i + 1) < 0x90) || (c == 0xf4 && b(i + 1) >= 0x90))) return 0;
  return n;
}

}  // namespace

void append_json_string(std::string& out, std::string_view v) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < v.size();) {
    unsigned char c = static_cast<unsigned char>(v[i]);
    if (c >= 0x80) {
      size_t n = utf8_len(v, i);
      if (n == 0) {
        out += "\xef\xbf\xbd";
        ++i;
      } else {
        out.append(v.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

Attributes parse_attributes_json(std::string_view json) {
  Attributes out;
  if (json.empty()) return out;
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out.emplace_back(it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return out;
}

}  // namespace txray
