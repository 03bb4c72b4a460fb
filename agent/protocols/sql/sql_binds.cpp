#include "protocols/sql/sql_binds.h"

#include <cstdio>
#include <cstring>

namespace txray::sql {

const char* bind_type_name(BindType t) {
  switch (t) {
    case BindType::unset: return "unset";
    case BindType::null: return "null";
    case BindType::integer: return "int";
    case BindType::real: return "real";
    case BindType::text: return "text";
    case BindType::blob: return "blob";
    case BindType::zeroblob: return "zeroblob";
    case BindType::value: return "value";
    case BindType::pointer: return "pointer";
    case BindType::decimal: return "decimal";
    case BindType::datetime: return "datetime";
  }
  return "?";
}

std::string quote_value(std::string_view v, size_t max_bind) {
  std::string s(v);
  truncate_utf8(s, max_bind);
  std::string q;
  q.reserve(s.size() + 2);
  q += '\'';
  for (char c : s) {
    if (c == '\'') q += '\'';
    q += c;
  }
  q += '\'';
  return q;
}

void BindList::set(int index, BindType type, std::string_view raw, TextMode mode) {
  if (mode == TextMode::off || index < 1) return;
  if (index > total_) {
    total_ = index;
    dirty_ = true;
  }
  if (index > kMaxRecorded) return;
  if (size_t(index) > slots_.size()) slots_.resize(size_t(index));
  Slot& s = slots_[size_t(index - 1)];
  if (s.type != type) {
    s.type = type;
    dirty_ = true;
  }
  if (mode == TextMode::raw) {
    s.raw.assign(raw);  // the caller formatted (and cut) it
    dirty_ = true;
  }
}

void BindList::clear() {
  if (slots_.empty() && total_ == 0) return;  // (only indices past kMaxRecorded bound: no slots, a total)
  slots_.clear();
  total_ = 0;
  text_.clear();
  dirty_ = false;
  shared_stale_ = true;
}

const std::string& BindList::text() {
  if (!dirty_) return text_;
  dirty_ = false;
  shared_stale_ = true;
  text_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (i) text_ += ", ";
    const Slot& s = slots_[i];
    text_ += s.raw.empty() || s.type == BindType::unset ? bind_type_name(s.type) : s.raw;
  }
  if (total_ > kMaxRecorded) text_ += text_.empty() ? "..." : ", ...";
  return text_;
}

const SharedText& BindList::shared() {
  text();
  if (shared_stale_) {
    shared_ = SharedText(text_);
    shared_stale_ = false;
  }
  return shared_;
}

std::string format_pg_params(int n, const char* const* values, const int* lengths, const int* formats,
                             TextMode mode, size_t max_bind) {
  std::string out;
  if (mode == TextMode::off || n <= 0) return out;
  for (int i = 0; i < n && i < BindList::kMaxRecorded; ++i) {
    if (i) out += ", ";
    bool binary = formats && formats[i] == 1;
    const char* v = values ? values[i] : nullptr;
    if (!v) out += mode == TextMode::raw ? "NULL" : "null";
    else if (binary)
      out += (mode == TextMode::raw && lengths) ? "binary(" + std::to_string(lengths[i]) + ")" : "binary";
    else out += mode == TextMode::raw ? quote_value(v, max_bind) : "text";
  }
  if (n > BindList::kMaxRecorded) out += ", ...";
  return out;
}

// enum_field_types numbers (mariadb_com.h / mysql_com.h; the protocol's, so the core needs no client header).
namespace mysql_type {
constexpr int kDecimal = 0, kTiny = 1, kShort = 2, kLong = 3, kFloat = 4, kDouble = 5, kNull = 6, kTimestamp = 7,
              kLongLong = 8, kInt24 = 9, kDate = 10, kTime = 11, kDateTime = 12, kYear = 13, kNewDate = 14,
              kVarchar = 15, kBit = 16, kJson = 245, kNewDecimal = 246, kEnum = 247, kSet = 248, kTinyBlob = 249,
              kMediumBlob = 250, kLongBlob = 251, kBlob = 252, kVarString = 253, kString = 254, kGeometry = 255;
}  // namespace mysql_type

BindType mysql_bind_type(const MysqlParam& p) {
  using namespace mysql_type;
  if (p.is_null) return BindType::null;
  switch (p.type) {
    case kTiny: case kShort: case kLong: case kLongLong: case kInt24: case kYear: return BindType::integer;
    case kFloat: case kDouble: return BindType::real;
    case kDecimal: case kNewDecimal: return BindType::decimal;
    case kNull: return BindType::null;
    case kTimestamp: case kDate: case kTime: case kDateTime: case kNewDate: return BindType::datetime;
    case kVarchar: case kJson: case kEnum: case kSet: case kVarString: case kString: return BindType::text;
    case kBit: case kTinyBlob: case kMediumBlob: case kLongBlob: case kBlob: case kGeometry: return BindType::blob;
    default: return BindType::value;
  }
}

namespace {
// MYSQL_TIME's leading fields (the layout is the same in MariaDB's and MySQL's clients).
struct MysqlTimeHead {
  unsigned int year, month, day, hour, minute, second;
  unsigned long second_part;
  bool neg;
};

template <typename T>
T load(const void* b) {
  T v;
  std::memcpy(&v, b, sizeof v);
  return v;
}
}  // namespace

std::string mysql_param_raw(const MysqlParam& p, size_t max_bind) {
  using namespace mysql_type;
  if (p.is_null || p.type == kNull) return "NULL";
  const void* b = p.buffer;
  if (!b) return "NULL";  // libmariadb sends NULL for a parameter with no buffer
  char buf[96];
  switch (p.type) {
    case kTiny: return std::to_string(p.is_unsigned ? int64_t(load<uint8_t>(b)) : int64_t(load<int8_t>(b)));
    case kShort: case kYear:
      return std::to_string(p.is_unsigned ? int64_t(load<uint16_t>(b)) : int64_t(load<int16_t>(b)));
    case kLong: case kInt24:
      return std::to_string(p.is_unsigned ? int64_t(load<uint32_t>(b)) : int64_t(load<int32_t>(b)));
    case kLongLong:
      return p.is_unsigned ? std::to_string(load<uint64_t>(b)) : std::to_string(load<int64_t>(b));
    case kFloat: std::snprintf(buf, sizeof buf, "%.9g", double(load<float>(b))); return buf;
    case kDouble: std::snprintf(buf, sizeof buf, "%.17g", load<double>(b)); return buf;
    case kTimestamp: case kDate: case kTime: case kDateTime: case kNewDate: {
      auto t = load<MysqlTimeHead>(b);
      std::snprintf(buf, sizeof buf, "datetime(%s%04u-%02u-%02u %02u:%02u:%02u)", t.neg ? "-" : "", t.year % 10000,
                    t.month % 100, t.day % 100, t.hour % 1000, t.minute % 100, t.second % 100);
      return buf;
    }
    case kDecimal: case kNewDecimal: case kVarchar: case kJson: case kEnum: case kSet: case kVarString:
    case kString:
      return quote_value(std::string_view(static_cast<const char*>(b), p.length), max_bind);
    default: return "blob(" + std::to_string(p.length) + ")";
  }
}

}  // namespace txray::sql
