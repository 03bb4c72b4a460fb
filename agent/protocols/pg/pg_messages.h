// PostgreSQL protocol 3.0 messages: the framing of one direction of a connection and the decoding of
// the few message bodies the client needs. Pure code (no recorder, no I/O); bounded memory: a message's
// body is kept only up to its type's cap (DataRow and CopyData: nothing), the rest is skipped by length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace txray::pg {

inline constexpr uint32_t kProtocol3 = 196608;     // StartupMessage: 3.0
inline constexpr uint32_t kSslRequest = 80877103;
inline constexpr uint32_t kGssEncRequest = 80877104;
inline constexpr uint32_t kCancelRequest = 80877102;
inline constexpr uint32_t kMaxLength = 1u << 30;   // a length past 1 GiB is not PostgreSQL
inline constexpr size_t kMaxKept = 64 * 1024;       // the most of one message body ever kept

// One complete message. `type` is 0 for the untyped messages that open a connection (StartupMessage,
// SSLRequest, GSSENCRequest). `body` holds its first bytes (up to the type's cap); `length` is the
// body's real length; `cut` says body is shorter than length. `body` is valid during the callback only
// (it points into the program's buffer when the message came whole, else into the framer's).
struct Message {
  char type = 0;
  uint32_t length = 0;
  std::string_view body;
  bool cut() const { return body.size() < length; }
};

enum class Side : uint8_t { frontend, backend };

// Splits one direction's bytes into messages, however the program's calls split them. Fed in order;
// calls `on(msg)` for each complete message (on returns false to stop there). Breaks (feed returns false,
// and for good) at a length under 4 or over 1 GiB, or a type byte this direction never carries.
class Framer {
 public:
  explicit Framer(Side side) : side_(side) {}
  // The next message has no type byte (a StartupMessage or SSLRequest): true at a frontend's start and
  // after the server refused SSL/GSS encryption.
  void expect_untyped(bool v) { untyped_ = v; }
  // The next byte is the server's one-byte answer to an SSLRequest / GSSENCRequest ('S', 'N', 'G'), not a
  // message (unless it is 'E': a server too old for the request sends an ErrorResponse).
  void expect_answer_byte(bool v) { answer_byte_ = v; }
  bool broken() const { return broken_; }
  // Bytes consumed so far (in a callback: up to the end of the message handed over), and the whole size
  // of the message handed over last (type, length and body).
  uint64_t pos() const { return pos_; }
  uint64_t last_size() const { return last_size_; }

  template <typename On>
  bool feed(const char* p, size_t n, On&& on);

 private:
  bool begin_body();

  Side side_;
  bool untyped_ = false;
  bool answer_byte_ = false;
  bool broken_ = false;
  char head_[5] = {};
  uint8_t head_n_ = 0;
  char type_ = 0;
  uint32_t length_ = 0;  // body bytes (the length field minus its own 4)
  uint32_t got_ = 0;     // body bytes seen
  size_t cap_ = 0;       // body bytes to keep
  bool in_body_ = false;
  std::string body_;
  uint64_t pos_ = 0;
  uint64_t last_size_ = 0;
};

// The body bytes a message of `type` keeps: what the client decodes, nothing for the rest.
size_t keep_cap(Side side, char type);
bool known_type(Side side, char type);

// Per side (frontend 0, backend 1) and type byte: the bytes keep_cap keeps, or kUnknownType for a type
// that side never sends. One load per message header on the framer's fast path.
inline constexpr uint32_t kUnknownType = 0xffffffffu;
struct TypeCaps {
  uint32_t cap[2][256];
};
extern const TypeCaps kTypeCap;

// --- body decoders: every one is bounded by the body it is given and never reads past it ---

// Reads big-endian integers and NUL-terminated strings; `ok` turns false at the first read past the end.
struct Reader {
  std::string_view b;
  size_t at = 0;
  bool ok = true;
  uint8_t u8() {
    if (left() < 1) return ok = false, 0;
    return uint8_t(b[at++]);
  }
  int16_t i16() {
    if (left() < 2) return at = b.size(), ok = false, 0;
    auto* u = reinterpret_cast<const unsigned char*>(b.data() + at);
    at += 2;
    return int16_t(uint16_t(u[0] << 8 | u[1]));
  }
  int32_t i32() {
    if (left() < 4) return at = b.size(), ok = false, 0;
    auto* u = reinterpret_cast<const unsigned char*>(b.data() + at);
    at += 4;
    return int32_t(uint32_t(u[0]) << 24 | uint32_t(u[1]) << 16 | uint32_t(u[2]) << 8 | uint32_t(u[3]));
  }
  // Up to (not including) the NUL; the rest when there is none (ok=false). Inline: names and portals
  // are a few bytes, read several times per statement.
  std::string_view cstr() {
    if (at >= b.size()) return ok = false, std::string_view();
    const char* p = b.data();
    size_t e = at;
    while (e < b.size() && p[e] != '\0') ++e;
    std::string_view s(p + at, e - at);
    if (e == b.size()) {
      at = b.size();
      ok = false;
    } else {
      at = e + 1;
    }
    return s;
  }
  std::string_view bytes(size_t n) {
    if (left() < n) {
      std::string_view s = b.substr(at);
      at = b.size();
      ok = false;
      return s;
    }
    std::string_view s = b.substr(at, n);
    at += n;
    return s;
  }
  size_t left() const { return at <= b.size() ? b.size() - at : 0; }
};

inline uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(u[0]) << 24 | uint32_t(u[1]) << 16 | uint32_t(u[2]) << 8 | uint32_t(u[3]);
}

// StartupMessage parameters (after the protocol number): user, database (libpq's default: the user).
struct Startup {
  uint32_t code = 0;
  std::string user, database, application;
};
Startup parse_startup(std::string_view body);

// ErrorResponse / NoticeResponse fields: 'V' (or 'S') severity, 'C' SQLSTATE, 'M' message.
struct ServerError {
  std::string_view severity, sqlstate, message;
};
ServerError parse_error(std::string_view body);

// CommandComplete's tag: "INSERT 0 5" → changes 5; "SELECT 3" → rows 3 (the count libpq reports as
// PQcmdTuples for INSERT/UPDATE/DELETE/MERGE/COPY, and the rows of SELECT/FETCH/MOVE).
struct Tag {
  bool write = false;  // INSERT, UPDATE, DELETE, MERGE, COPY
  int64_t count = -1;  // the tag's last number, -1 when it has none
};
Tag parse_tag(std::string_view body);

// Parse: statement name, query text, parameter type OIDs.
struct ParseMsg {
  std::string_view name, query;
  std::vector<uint32_t> oids;
};
bool parse_parse(std::string_view body, ParseMsg* out);

// One parameter of a Bind: null, or its bytes (cut when the message was cut) in text or binary format.
struct BindParam {
  bool null = false;
  bool binary = false;
  bool cut = false;
  uint32_t length = 0;
  std::string_view value;
};
struct BindMsg {
  std::string_view portal, statement;
  std::vector<BindParam> params;
  int total = 0;      // parameters the message declares
  bool cut = false;   // the body ended before every parameter was read
};
bool parse_bind(std::string_view body, BindMsg* out);

// A binary-format value of type `oid` as PostgreSQL's text output writes it (int2/4/8, float4/8, bool,
// text, varchar, bpchar, name, json, jsonb, numeric, uuid, date, timestamp, timestamptz; bytea as
// "bytea(N)"). False when the type is not one of those or the bytes are not a valid value of it.
bool binary_to_text(uint32_t oid, std::string_view v, std::string* out);

// The statements of a simple Query, split on ';' outside quotes, comments and dollar quotes (the
// lexer of sql_lexer.h); empty statements dropped. A query with no ';' is one piece (no lexing).
std::vector<std::string_view> split_statements(std::string_view query);

// --- Framer::feed ------------------------------------------------------------------------------------

template <typename On>
bool Framer::feed(const char* p, size_t n, On&& on) {
  while (n > 0 && !broken_) {
    if (answer_byte_ && !in_body_ && head_n_ == 0 && *p != 'E') {
      answer_byte_ = false;
      Message m{*p, 0, {}};
      ++p, --n;
      ++pos_;
      last_size_ = 1;
      if (!on(m)) return false;
      continue;
    }
    answer_byte_ = false;
    // A whole typed message in what is left of this call (the common case: drivers write and servers
    // answer in whole messages): its body is handed over in place, nothing copied.
    if (!in_body_ && head_n_ == 0 && !untyped_ && n >= 5) {
      char t = p[0];
      uint32_t len = be32(p + 1);
      uint32_t cap = kTypeCap.cap[side_ == Side::backend][uint8_t(t)];
      if (cap == kUnknownType || len < 4 || len > kMaxLength) {
        pos_ += 5;  // the header was read, as when it comes in pieces
        return !(broken_ = true);
      }
      size_t body = len - 4;
      if (n - 5 >= body) {
        Message m{t, uint32_t(body), std::string_view(p + 5, body < cap ? body : cap)};
        p += 5 + body, n -= 5 + body;
        pos_ += 5 + body;
        last_size_ = 5 + body;
        if (!on(m)) return false;
        continue;
      }
    }
    if (!in_body_) {
      size_t need = untyped_ ? 4 : 5;
      while (head_n_ < need && n > 0) head_[head_n_++] = *p++, --n, ++pos_;
      if (head_n_ < need) return true;
      if (!begin_body()) return false;
    }
    size_t take = length_ - got_ < n ? length_ - got_ : n;
    if (body_.size() < cap_) {
      size_t k = cap_ - body_.size() < take ? cap_ - body_.size() : take;
      body_.append(p, k);
    }
    got_ += uint32_t(take);
    p += take, n -= take;
    pos_ += take;
    if (got_ == length_) {
      in_body_ = false;
      last_size_ = head_n_ + uint64_t(length_);
      head_n_ = 0;
      Message m{type_, length_, body_};
      if (!on(m)) return false;
    }
  }
  if (in_body_ && got_ == length_) {  // an empty body completes with its header
    in_body_ = false;
    last_size_ = head_n_ + uint64_t(length_);
    head_n_ = 0;
    Message m{type_, length_, body_};
    if (!on(m)) return false;
  }
  return !broken_;
}

}  // namespace txray::pg
