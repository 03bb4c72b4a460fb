// A small JSON tree, reader and writer for the JSON channel, in the same style as xml.h (a tree built,
// then written; parsed back into a tree), so that the JSON and the SOAP channel differ by their encoding
// and not by the quality of the library behind them. Numbers are kept as int64 when they are integers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace txray::samples::orders::jsonv {

struct Value {
  enum class Type { Null, Bool, Int, Double, String, Array, Object } type = Type::Null;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<Value> items;                            // Array
  std::vector<std::pair<std::string, Value>> members;  // Object, in document order

  static Value integer(int64_t v) { Value x; x.type = Type::Int; x.i = v; return x; }
  static Value string(std::string v) { Value x; x.type = Type::String; x.s = std::move(v); return x; }
  static Value object() { Value x; x.type = Type::Object; return x; }
  static Value array() { Value x; x.type = Type::Array; return x; }

  Value& add(std::string key, Value v) { members.emplace_back(std::move(key), std::move(v)); return members.back().second; }
  // Member `key` of an object; throws std::runtime_error when missing or not an object.
  const Value& at(std::string_view key) const;
  const Value* find(std::string_view key) const;
  int64_t as_int() const;             // throws unless Int
  const std::string& as_string() const;  // throws unless String
};

Value parse(std::string_view text);  // throws std::runtime_error with the offset on malformed input
std::string write(const Value& v);   // compact, no whitespace

}  // namespace txray::samples::orders::jsonv
