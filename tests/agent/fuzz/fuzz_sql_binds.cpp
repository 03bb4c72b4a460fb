// libFuzzer target: bind parameters as the SQL hooks record them (agent/protocols/sql/sql_binds.cpp), from the
// values the program passes to sqlite3_bind_* and libpq's PQexecParams family. Promises checked:
//  - mask mode never lets a value through: the attribute is made of type names only;
//  - raw mode quotes each value so that the SQL lexer reads it as one literal, whose content is the
//    value cut to TXRAY_SQL_MAX_BIND bytes on a UTF-8 boundary;
//  - at most 64 parameters are listed ("..." after), whatever indices the program uses;
//  - a statement re-bound with values of the same types keeps the same shared text (no rebuild).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocols/sql/sql_binds.h"
#include "protocols/sql/sql_lexer.h"

using namespace txray::sql;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a, std::string_view b = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n  [%.*s]\n", what, int(a.size()), a.data(), int(b.size()),
          b.data());
  abort();
}

// The items of a ", "-separated list (values in raw mode may contain ", " themselves: only used on
// mask-mode text).
std::vector<std::string_view> items(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t c = s.find(", ");
    out.push_back(s.substr(0, c));
    if (c == std::string_view::npos) break;
    s.remove_prefix(c + 2);
  }
  return out;
}

bool is_type_name(std::string_view s) {
  for (int t = 0; t <= int(BindType::datetime); ++t)
    if (s == bind_type_name(BindType(t))) return true;
  return s == "binary" || s == "...";
}

void check_quoted(std::string_view v, size_t max_bind) {
  std::string q = quote_value(v, max_bind);
  if (q.size() > 2 * max_bind + 2) fail("quoted value too long", v, q);
  std::vector<Token> t = tokenize(q);
  if (t.size() != 1 || t[0].kind != TokenKind::literal || t[0].text != q) fail("quoted value is not one literal", v, q);
  std::string inner;
  for (size_t i = 1; i + 1 < q.size(); ++i) {
    inner += q[i];
    if (q[i] == '\'') ++i;  // '' stands for '
  }
  if (v.size() <= max_bind) {
    if (inner != v) fail("quoted value changed", v, q);
  } else {
    if (inner.size() < 3 || inner.compare(inner.size() - 3, 3, "...") != 0) fail("cut value without ...", v, q);
    std::string_view kept(inner.data(), inner.size() - 3);
    if (kept.size() > max_bind || v.substr(0, kept.size()) != kept ||
        (!kept.empty() && (static_cast<unsigned char>(v[kept.size()]) & 0xC0) == 0x80))
      fail("value cut wrongly", v, q);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  size_t max_bind = in.ConsumeIntegralInRange<size_t>(8, 128);  // sql_config.h: 8..4096
  TextMode mode = in.ConsumeBool() ? TextMode::mask : TextMode::raw;

  // sqlite3_bind_*: a sequence of binds on one statement, text read after each few.
  BindList mask_list, raw_list;
  int ops = in.ConsumeIntegralInRange(0, 40);
  for (int k = 0; k < ops && in.remaining_bytes(); ++k) {
    int index = in.ConsumeBool() ? in.ConsumeIntegralInRange(-2, 70) : in.ConsumeIntegral<int>();
    BindType type = BindType(in.ConsumeIntegralInRange(0, int(BindType::datetime)));
    std::string raw = quote_value(in.ConsumeRandomLengthString(64), max_bind);
    mask_list.set(index, type, raw, TextMode::mask);
    raw_list.set(index, type, raw, TextMode::raw);
    if (in.ConsumeBool()) {
      std::string before = mask_list.text();
      const txray::SharedText* s1 = &mask_list.shared();
      std::string_view s1v = s1->view();
      if (s1v != before) fail("shared text differs from text", s1v, before);
      for (std::string_view it : items(before))
        if (!is_type_name(it)) fail("mask mode let a value through", before, it);
      if (items(before).size() > BindList::kMaxRecorded + 1) fail("more than 64 parameters listed", before);
      // Re-binding the same types changes nothing.
      if (index >= 1 && index <= BindList::kMaxRecorded) {
        const char* p1 = s1v.data();
        mask_list.set(index, type, "", TextMode::mask);
        if (mask_list.shared().view().data() != p1) fail("same-type re-bind rebuilt the text", before);
      }
      raw_list.text();
    }
    if (in.ConsumeIntegralInRange(0, 15) == 0) {
      mask_list.clear();
      raw_list.clear();
      if (!mask_list.text().empty()) fail("cleared list has text", mask_list.text());
    }
  }

  // libpq parameters.
  int n = in.ConsumeIntegralInRange(0, 80);
  std::vector<std::string> store;
  store.reserve(size_t(n));
  std::vector<const char*> values(static_cast<size_t>(n));
  std::vector<int> lengths(static_cast<size_t>(n)), formats(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    formats[size_t(i)] = in.ConsumeIntegralInRange(0, 1);
    if (in.ConsumeIntegralInRange(0, 7) == 0) {
      values[size_t(i)] = nullptr;
    } else {
      store.push_back(in.ConsumeRandomLengthString(64));
      values[size_t(i)] = store.back().c_str();
    }
    lengths[size_t(i)] = values[size_t(i)] ? int(store.back().size()) : 0;
  }
  bool with_formats = in.ConsumeBool(), with_lengths = in.ConsumeBool();
  std::string out = format_pg_params(n, n ? values.data() : nullptr, with_lengths ? lengths.data() : nullptr,
                                     with_formats ? formats.data() : nullptr, mode, max_bind);
  if (mode == TextMode::mask) {
    for (std::string_view it : items(out))
      if (!is_type_name(it)) fail("mask mode let a libpq value through", out, it);
  } else {
    size_t bound = 0;
    for (int i = 0; i < n && i < BindList::kMaxRecorded; ++i) bound += 2 * max_bind + 2 + 24;
    if (out.size() > bound + 5) fail("raw libpq parameters too long", out);
  }
  if (n == 0 && !out.empty()) fail("text without parameters", out);

  // quote_value on the rest.
  std::string rest = in.ConsumeRemainingBytesAsString();
  std::vector<char> buf(rest.begin(), rest.end());
  check_quoted(std::string_view(buf.data(), buf.size()), max_bind);
  return 0;
}
