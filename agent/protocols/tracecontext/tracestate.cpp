#include "protocols/tracecontext/tracestate.h"

namespace txray {
namespace {

bool ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view v) {
  while (!v.empty() && ows(v.front())) v.remove_prefix(1);
  while (!v.empty() && ows(v.back())) v.remove_suffix(1);
  return v;
}

bool lcalpha(char c) { return c >= 'a' && c <= 'z'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool key_char(char c) { return lcalpha(c) || digit(c) || c == '_' || c == '-' || c == '*' || c == '/'; }

bool valid_key(std::string_view k) {
  size_t at = k.find('@');
  if (at == std::string_view::npos) {  // simple-key = lcalpha 0*255(key chars)
    if (k.empty() || k.size() > 256 || !lcalpha(k[0])) return false;
    for (char c : k) if (!key_char(c)) return false;
    return true;
  }
  // multi-tenant-key = tenant-id "@" system-id
  std::string_view tenant = k.substr(0, at), system = k.substr(at + 1);
  if (tenant.empty() || tenant.size() > 241 || !(lcalpha(tenant[0]) || digit(tenant[0]))) return false;
  if (system.empty() || system.size() > 14 || !lcalpha(system[0])) return false;
  for (char c : tenant) if (!key_char(c)) return false;
  for (char c : system) if (!key_char(c)) return false;  // a second '@' fails here
  return true;
}

// nblk-chr = %x21-2B / %x2D-3C / %x3E-7E ; chr = %x20 / nblk-chr
bool nblk(char c) { return c >= 0x21 && c <= 0x7e && c != ',' && c != '='; }

bool valid_value(std::string_view v) {
  if (v.empty() || v.size() > 256 || !nblk(v.back())) return false;
  for (char c : v) if (c != ' ' && !nblk(c)) return false;
  return true;
}

}  // namespace

bool valid_tracestate_member(std::string_view m) {
  size_t eq = m.find('=');
  if (eq == std::string_view::npos) return false;
  return valid_key(m.substr(0, eq)) && valid_value(m.substr(eq + 1));
}

ListResult combine_tracestate(const std::string_view* lines, size_t n, std::string& out) {
  out.clear();
  // Members as (offset, length) in out while checking; at most 32 of them.
  struct Span { unsigned short at, len; };
  Span m[kMaxTraceStateMembers];
  size_t count = 0;
  std::string all;  // the valid members joined, before any truncation
  for (size_t i = 0; i < n; ++i) {
    std::string_view line = lines[i];
    while (true) {
      size_t comma = line.find(',');
      std::string_view member = trim(line.substr(0, comma));
      if (!member.empty()) {
        if (count == kMaxTraceStateMembers || !valid_tracestate_member(member)) return ListResult::dropped;
        std::string_view key = member.substr(0, member.find('='));
        for (size_t j = 0; j < count; ++j) {  // §3.3.1.1: no key twice
          std::string_view other(all.data() + m[j].at, m[j].len);
          if (other.substr(0, other.find('=')) == key) return ListResult::dropped;
        }
        if (!all.empty()) all += ',';
        m[count++] = Span{static_cast<unsigned short>(all.size()), static_cast<unsigned short>(member.size())};
        all.append(member);
      }
      if (comma == std::string_view::npos) break;
      line.remove_prefix(comma + 1);
    }
  }
  if (count == 0) return ListResult::empty;
  if (all.size() <= kMaxTraceState) {
    out.swap(all);
    return ListResult::kept;
  }
  // §3.3.1.5: first the members longer than 128 characters, then from the end, until it fits.
  bool keep[kMaxTraceStateMembers];
  size_t total = all.size();
  for (size_t j = 0; j < count; ++j) keep[j] = true;
  for (size_t j = count; j-- > 0 && total > kMaxTraceState;) {
    if (m[j].len > 128) { keep[j] = false; total -= m[j].len + 1; }
  }
  for (size_t j = count; j-- > 0 && total > kMaxTraceState;) {
    if (keep[j]) { keep[j] = false; total -= m[j].len + 1; }
  }
  for (size_t j = 0; j < count; ++j) {
    if (!keep[j]) continue;
    if (!out.empty()) out += ',';
    out.append(all, m[j].at, m[j].len);
  }
  return out.empty() ? ListResult::dropped : ListResult::truncated;
}

ListResult combine_baggage(const std::string_view* lines, size_t n, std::string& out) {
  out.clear();
  for (size_t i = 0; i < n; ++i) {
    std::string_view v = trim(lines[i]);
    if (v.empty()) continue;
    for (char c : v) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) { out.clear(); return ListResult::dropped; }
    }
    if (out.size() + (out.empty() ? 0 : 1) + v.size() > kMaxBaggage) { out.clear(); return ListResult::dropped; }
    if (!out.empty()) out += ',';
    out.append(v);
  }
  return out.empty() ? ListResult::empty : ListResult::kept;
}

}  // namespace txray
