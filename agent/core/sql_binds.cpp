#include "sql_binds.h"

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

}  // namespace txray::sql
