#include "protocols/pg/pg_messages.h"

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "protocols/pg/pg_client.h"
#include "protocols/sql/sql_lexer.h"

namespace txray::pg {

bool looks_like_start(const char* p, size_t n) {
  if (!p || n < 8) return false;
  uint32_t len = be32(p), code = be32(p + 4);
  if (code == kSslRequest || code == kGssEncRequest) return len == 8;
  // The server takes a startup packet of at most 10,000 bytes (MAX_STARTUP_PACKET_LENGTH).
  return code == kProtocol3 && len >= 8 && len <= 10000;
}

namespace {
// Bit 0: a frontend message type, bit 1: a backend one (a table: every message's header asks).
constexpr auto kTypes = [] {
  std::array<uint8_t, 256> t{};
  for (char c : std::string_view("QPBDESHCXpdcfF")) t[uint8_t(c)] |= 1;
  for (char c : std::string_view("RKSZENA123ntTDCIsGHWdcVv")) t[uint8_t(c)] |= 2;
  return t;
}();

constexpr size_t cap_of(Side side, char t) {
  if (side == Side::frontend) {
    switch (t) {
      case 0: return 10000;  // StartupMessage (the server's own limit)
      case 'Q': case 'P': case 'B': return kMaxKept;
      case 'D': case 'E': case 'C': return 1024;  // a name and a kind or a row limit
      default: return 0;  // PasswordMessage / SASL (never kept), CopyData, Sync, Flush, Terminate…
    }
  }
  switch (t) {
    case 'E': case 'N': return 8192;
    case 'C': return 256;
    case 'Z': return 1;
    case 't': return 4096;  // ParameterDescription: 1,022 parameter types
    default: return 0;      // DataRow, CopyData, RowDescription, ParameterStatus, Authentication…
  }
}
}  // namespace

bool known_type(Side side, char t) { return kTypes[uint8_t(t)] & (side == Side::frontend ? 1 : 2); }

size_t keep_cap(Side side, char t) { return cap_of(side, t); }

// Constant-initialized: a hook may frame bytes before any dynamic initializer of the agent ran.
constexpr TypeCaps kTypeCap = [] {
  TypeCaps c{};
  for (int side = 0; side < 2; ++side)
    for (int t = 0; t < 256; ++t) {
      Side sd = side ? Side::backend : Side::frontend;
      bool known = kTypes[size_t(t)] & (side ? 2 : 1);
      c.cap[side][t] = known ? uint32_t(cap_of(sd, char(t))) : kUnknownType;
    }
  return c;
}();

bool Framer::begin_body() {
  uint32_t len;
  if (untyped_) {
    type_ = 0;
    len = be32(head_);
  } else {
    type_ = head_[0];
    len = be32(head_ + 1);
    if (!known_type(side_, type_)) return !(broken_ = true);
  }
  if (len < 4 || len > kMaxLength) return !(broken_ = true);
  length_ = len - 4;
  got_ = 0;
  cap_ = keep_cap(side_, type_);
  body_.clear();
  in_body_ = true;
  return true;
}

// --- bodies ------------------------------------------------------------------------------------------

Startup parse_startup(std::string_view body) {
  Startup s;
  Reader r{body};
  s.code = uint32_t(r.i32());
  if (!r.ok || s.code != kProtocol3) return s;
  bool have_db = false;
  while (r.ok && r.left() > 0) {
    std::string_view k = r.cstr();
    if (k.empty()) break;
    std::string_view v = r.cstr();
    if (k == "user") s.user.assign(v.substr(0, 256));
    else if (k == "database") s.database.assign(v.substr(0, 256)), have_db = true;
    else if (k == "application_name") s.application.assign(v.substr(0, 256));
  }
  if (!have_db) s.database = s.user;
  return s;
}

ServerError parse_error(std::string_view body) {
  ServerError e;
  std::string_view sev_local;
  Reader r{body};
  while (r.ok && r.left() > 0) {
    uint8_t f = r.u8();
    if (f == 0) break;
    std::string_view v = r.cstr();
    if (f == 'V') e.severity = v;
    else if (f == 'S') sev_local = v;
    else if (f == 'C') e.sqlstate = v;
    else if (f == 'M') e.message = v;
  }
  if (e.severity.empty()) e.severity = sev_local;
  return e;
}

Tag parse_tag(std::string_view body) {
  Tag t;
  std::string_view s = body.substr(0, body.find('\0'));
  if (s.empty()) return t;
  switch (s[0]) {  // most tags are SELECT: one comparison
    case 'I': t.write = s.starts_with("INSERT"); break;
    case 'U': t.write = s.starts_with("UPDATE"); break;
    case 'D': t.write = s.starts_with("DELETE"); break;
    case 'M': t.write = s.starts_with("MERGE"); break;
    case 'C': t.write = s.starts_with("COPY"); break;
    default: break;
  }
  // The last word, read from the end: a count when it is all digits (at most 18) after a space.
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  size_t digits = s.size() - i;
  if (digits == 0 || digits > 18 || i == 0 || s[i - 1] != ' ') return t;
  int64_t v = 0;
  for (; i < s.size(); ++i) v = v * 10 + (s[i] - '0');
  t.count = v;
  return t;
}

bool parse_parse(std::string_view body, ParseMsg* out) {
  Reader r{body};
  out->name = r.cstr();
  out->query = r.cstr();
  out->oids.clear();
  if (!r.ok) return false;
  int n = r.i16();
  for (int i = 0; i < n && r.ok; ++i) {
    uint32_t oid = uint32_t(r.i32());
    if (r.ok) out->oids.push_back(oid);
  }
  return true;
}

bool parse_bind(std::string_view body, BindMsg* out) {
  Reader r{body};
  out->portal = r.cstr();
  out->statement = r.cstr();
  out->params.clear();
  out->total = 0;
  out->cut = false;
  if (!r.ok) return false;
  int nf = r.i16();
  if (nf < 0) return false;
  // Format codes: none (all text), one (for all), or one per parameter. Kept as views, read below.
  size_t formats_at = r.at;
  r.bytes(size_t(nf) * 2);
  int np = r.ok ? r.i16() : 0;
  if (!r.ok) return out->cut = true, true;
  if (np < 0 || (nf > 1 && nf != np)) return false;
  out->total = np;
  for (int i = 0; i < np; ++i) {
    BindParam p;
    int fi = nf == 1 ? 0 : i;
    if (nf > 0) {
      auto* u = reinterpret_cast<const unsigned char*>(body.data() + formats_at + size_t(fi) * 2);
      p.binary = (u[0] << 8 | u[1]) == 1;
    }
    int32_t len = r.i32();
    if (!r.ok) return out->cut = true, true;
    if (len < -1) return false;
    if (len == -1) {
      p.null = true;
    } else {
      p.length = uint32_t(len);
      p.value = r.bytes(size_t(len));
      p.cut = !r.ok;
    }
    out->params.push_back(p);
    if (!r.ok) return out->cut = true, true;
  }
  return true;
}

// --- binary values -----------------------------------------------------------------------------------

namespace {

uint64_t be64(const char* p) { return uint64_t(be32(p)) << 32 | be32(p + 4); }

// Proleptic Gregorian date of a day number (days since 1970-01-01), Howard Hinnant's algorithm.
void civil(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = unsigned(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t yy = int64_t(yoe) + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

constexpr int64_t kPgEpochDays = 10957;  // 2000-01-01 is day 10,957 after 1970-01-01

void append_date(int64_t days_since_2000, std::string* out) {
  int64_t y;
  unsigned m, d;
  civil(days_since_2000 + kPgEpochDays, &y, &m, &d);
  char b[48];
  if (y > 0) std::snprintf(b, sizeof b, "%04" PRId64 "-%02u-%02u", y, m, d);
  else std::snprintf(b, sizeof b, "%04" PRId64 "-%02u-%02u BC", 1 - y, m, d);
  out->append(b);
}

bool append_timestamp(int64_t us, bool tz, std::string* out) {
  if (us == INT64_MAX) return out->append("infinity"), true;
  if (us == INT64_MIN) return out->append("-infinity"), true;
  int64_t day = us / 86400000000LL, rem = us % 86400000000LL;
  if (rem < 0) rem += 86400000000LL, --day;
  std::string date;
  append_date(day, &date);
  bool bc = date.size() > 3 && date.compare(date.size() - 3, 3, " BC") == 0;
  if (bc) date.resize(date.size() - 3);
  char b[64];
  int64_t s = rem / 1000000, frac = rem % 1000000;
  std::snprintf(b, sizeof b, " %02d:%02d:%02d", int(s / 3600), int(s / 60 % 60), int(s % 60));
  out->append(date).append(b);
  if (frac) {
    std::snprintf(b, sizeof b, ".%06d", int(frac));
    std::string f(b);
    while (f.back() == '0') f.pop_back();
    out->append(f);
  }
  if (tz) out->append("+00");
  if (bc) out->append(" BC");
  return true;
}

// numeric: ndigits, weight, sign, dscale, then ndigits base-10000 digits.
bool append_numeric(std::string_view v, std::string* out) {
  Reader r{v};
  int nd = r.i16(), weight = r.i16();
  uint16_t sign = uint16_t(r.i16());
  int dscale = r.i16();
  if (!r.ok || nd < 0 || dscale < 0 || dscale > 1000 || r.left() != size_t(nd) * 2) return false;
  if (sign == 0xC000) return out->append("NaN"), true;
  if (sign == 0xD000) return out->append("Infinity"), true;
  if (sign == 0xF000) return out->append("-Infinity"), true;
  if (sign != 0 && sign != 0x4000) return false;
  std::vector<int> dig(static_cast<size_t>(nd), 0);
  for (int i = 0; i < nd; ++i) {
    dig[size_t(i)] = r.i16();
    if (dig[size_t(i)] < 0 || dig[size_t(i)] > 9999) return false;
  }
  if (weight < -1000 || weight > 1000) return false;
  std::string s;
  if (sign == 0x4000) s += '-';
  // Integer part: groups 0..weight.
  if (weight < 0) {
    s += '0';
  } else {
    for (int g = 0; g <= weight; ++g) {
      int d = g < nd ? dig[size_t(g)] : 0;
      char b[8];
      std::snprintf(b, sizeof b, g == 0 ? "%d" : "%04d", d);
      s += b;
    }
  }
  if (dscale > 0) {
    s += '.';
    std::string f;
    for (int g = weight + 1; int(f.size()) < dscale; ++g) {
      int d = g >= 0 && g < nd ? dig[size_t(g)] : 0;
      char b[8];
      std::snprintf(b, sizeof b, "%04d", d);
      f += b;
    }
    f.resize(size_t(dscale));
    s += f;
  }
  out->append(s);
  return true;
}

}  // namespace

bool binary_to_text(uint32_t oid, std::string_view v, std::string* out) {
  char b[64];
  switch (oid) {
    case 16:  // bool
      if (v.size() != 1) return false;
      return out->append(v[0] ? "t" : "f"), true;
    case 21:  // int2
      if (v.size() != 2) return false;
      std::snprintf(b, sizeof b, "%d", int(int16_t(uint16_t(uint8_t(v[0]) << 8 | uint8_t(v[1])))));
      return out->append(b), true;
    case 23:  // int4
    case 26:  // oid
      if (v.size() != 4) return false;
      if (oid == 26) std::snprintf(b, sizeof b, "%u", be32(v.data()));
      else std::snprintf(b, sizeof b, "%d", int32_t(be32(v.data())));
      return out->append(b), true;
    case 20:  // int8
      if (v.size() != 8) return false;
      std::snprintf(b, sizeof b, "%" PRId64, int64_t(be64(v.data())));
      return out->append(b), true;
    case 700: {  // float4
      if (v.size() != 4) return false;
      uint32_t u = be32(v.data());
      float f;
      std::memcpy(&f, &u, 4);
      std::snprintf(b, sizeof b, "%.9g", double(f));
      return out->append(b), true;
    }
    case 701: {  // float8
      if (v.size() != 8) return false;
      uint64_t u = be64(v.data());
      double d;
      std::memcpy(&d, &u, 8);
      std::snprintf(b, sizeof b, "%.17g", d);
      return out->append(b), true;
    }
    case 25: case 1043: case 1042: case 19: case 114: case 705:  // text, varchar, bpchar, name, json, unknown
      return out->append(v), true;
    case 3802:  // jsonb: a version byte (1), then the text
      if (v.empty() || v[0] != 1) return false;
      return out->append(v.substr(1)), true;
    case 1700:
      return append_numeric(v, out);
    case 2950: {  // uuid
      if (v.size() != 16) return false;
      for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out->push_back('-');
        std::snprintf(b, sizeof b, "%02x", unsigned(uint8_t(v[size_t(i)])));
        out->append(b);
      }
      return true;
    }
    case 1082: {  // date: days since 2000-01-01
      if (v.size() != 4) return false;
      int32_t d = int32_t(be32(v.data()));
      if (d == INT32_MAX) return out->append("infinity"), true;
      if (d == INT32_MIN) return out->append("-infinity"), true;
      append_date(d, out);
      return true;
    }
    case 1114: case 1184:  // timestamp, timestamptz: microseconds since 2000-01-01 (UTC for tz)
      if (v.size() != 8) return false;
      return append_timestamp(int64_t(be64(v.data())), oid == 1184, out);
    case 17:  // bytea: its length only
      std::snprintf(b, sizeof b, "bytea(%zu)", v.size());
      return out->append(b), true;
    default:
      return false;
  }
}

std::vector<std::string_view> split_statements(std::string_view q) {
  std::vector<std::string_view> out;
  if (q.find(';') == std::string_view::npos) {
    size_t b = q.find_first_not_of(" \t\r\n\f");
    if (b != std::string_view::npos) out.push_back(q.substr(b, q.find_last_not_of(" \t\r\n\f") - b + 1));
    return out;
  }
  // A piece runs from its first token to the end of its last one: comments and blanks around it, and
  // pieces with no token at all (the server runs nothing for them), are dropped.
  const char* first = nullptr;
  const char* last = nullptr;
  for (const sql::Token& t : sql::tokenize(q)) {
    if (t.kind == sql::TokenKind::punct && t.text == ";") {
      if (first) out.emplace_back(first, size_t(last - first));
      first = nullptr;
      continue;
    }
    if (!first) first = t.text.data();
    last = t.text.data() + t.text.size();
  }
  if (first) out.emplace_back(first, size_t(last - first));
  return out;
}

}  // namespace txray::pg
