// The MySQL/MariaDB client/server protocol as the client side of a connection sees it: packet framing and
// the decoders of the few packets a SQL row needs. Pure: bytes in, plain values out, no I/O, no core —
// what mysql_conn.h drives and the fuzz targets run alone.
//
// A packet is a 3-byte little-endian payload length and a sequence id; a payload of 0xffffff bytes is
// continued by the next packet (sequence + 1), so one logical packet can be any length. The Framer keeps
// of each logical packet only the head its consumer asks for (a command's SQL text, an OK or ERR; a row
// of a result set: the few bytes that tell a row from its terminator) and skips the rest by length:
// nothing is buffered without bound, whatever the peer sends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace txray::mysql {

// Capability flags (the greeting's and HandshakeResponse41's, lower and upper 16 bits; MariaDB's
// extended flags in bits 32..63).
namespace cap {
constexpr uint64_t kMysql = 1;  // CLIENT_LONG_PASSWORD; a MariaDB server leaves it clear
constexpr uint64_t kConnectWithDb = 1 << 3;
constexpr uint64_t kCompress = 1 << 5;
constexpr uint64_t kLocalFiles = 1 << 7;
constexpr uint64_t kProtocol41 = 1 << 9;
constexpr uint64_t kSsl = 1 << 11;
constexpr uint64_t kSecureConnection = 1 << 15;
constexpr uint64_t kMultiStatements = 1 << 16;
constexpr uint64_t kMultiResults = 1 << 17;
constexpr uint64_t kPluginAuth = 1 << 19;
constexpr uint64_t kConnectAttrs = 1 << 20;
constexpr uint64_t kPluginAuthLenencData = 1 << 21;
constexpr uint64_t kSessionTrack = 1 << 23;
constexpr uint64_t kDeprecateEof = 1 << 24;
constexpr uint64_t kZstdCompress = 1 << 26;     // MySQL 8
constexpr uint64_t kQueryAttributes = 1 << 27;  // MySQL 8
constexpr uint64_t kMariaCacheMetadata = uint64_t(1) << 36;
}  // namespace cap

namespace cmd {
constexpr uint8_t kQuit = 0x01, kInitDb = 0x02, kQuery = 0x03, kFieldList = 0x04, kRefresh = 0x07,
                  kStatistics = 0x09, kProcessKill = 0x0c, kDebug = 0x0d, kPing = 0x0e, kChangeUser = 0x11,
                  kStmtPrepare = 0x16, kStmtExecute = 0x17, kStmtSendLongData = 0x18, kStmtClose = 0x19,
                  kStmtReset = 0x1a, kSetOption = 0x1b, kStmtFetch = 0x1c, kResetConnection = 0x1f;
}  // namespace cmd

namespace status {
constexpr uint16_t kCursorExists = 0x0040;
constexpr uint16_t kMoreResults = 0x0008;
constexpr uint16_t kNoBackslashEscapes = 0x0200;
}  // namespace status

constexpr uint32_t kMaxPayload = 0xffffff;

// One logical packet: its first and last physical sequence ids, its whole length, and the head kept.
struct Packet {
  uint8_t seq = 0;
  uint8_t last_seq = 0;
  uint64_t len = 0;
  std::string_view head;  // the first min(len, keep) bytes
  bool whole() const { return head.size() == len; }
  int first() const { return head.empty() ? -1 : static_cast<unsigned char>(head[0]); }
};

// What a Framer asks of its consumer.
class PacketSink {
 public:
  // A logical packet begins: its sequence id, the length of its first physical packet and its first
  // byte (-1 for an empty packet). Returns how many bytes of its head to keep (the first is always kept).
  virtual size_t begin(uint8_t seq, uint32_t len, int first) = 0;
  // The packet is complete. False: stop (the stream is not followed any more).
  virtual bool packet(const Packet& p) = 0;

 protected:
  ~PacketSink() = default;
};

// Splits one direction's bytes into logical packets, wherever the program's calls split them.
class Framer {
 public:
  // False once the sink said stop or the framing broke (a continuation out of sequence); nothing more
  // should be fed then.
  bool feed(const char* p, size_t n, PacketSink& sink);
  void reset();
  // Bytes held between calls (a header in pieces, the kept head of a packet in pieces).
  size_t held() const { return head_.capacity() + sizeof hdr_; }
  // Bytes fed from the first byte of the current logical packet's header to the end of the current
  // feed() call: what the socket's counter already holds of this packet and after (the dispatch counts
  // a call's bytes before it feeds them).
  uint64_t since_packet_start() const { return fed_ - start_; }
  // Bytes of the current feed() call after the packet the sink is being told of: counted already, not
  // this packet's (0 outside a call).
  size_t ahead() const { return call_left_; }

 private:
  bool feed_packets(const char* p, size_t n, PacketSink& sink);
  bool start(PacketSink& sink, int first);
  bool finish(PacketSink& sink, std::string_view head);

  uint8_t hdr_[4] = {};
  uint8_t hdr_n_ = 0;
  bool in_packet_ = false;    // a logical packet is under way
  bool began_ = false;        // sink.begin() was called for it
  bool continued_ = false;    // its current physical packet is 0xffffff long: another one follows
  uint32_t left_ = 0;         // bytes of the current physical packet still to come
  uint32_t phys_len_ = 0;
  uint8_t seq_ = 0, last_seq_ = 0;
  uint64_t total_ = 0;        // the logical packet's length so far
  size_t keep_ = 0;
  std::string head_;
  uint64_t fed_ = 0;    // bytes given to feed() so far, the current call's included
  uint64_t start_ = 0;  // the stream offset of the current logical packet's first byte
  size_t call_left_ = 0;
};

// Little-endian integers and length-encoded values from the front of `s` (consumed); false when `s` is
// too short or the value is not valid there (0xfb, 0xff as a length).
bool take_int(std::string_view& s, size_t bytes, uint64_t* v);
bool take_lenenc(std::string_view& s, uint64_t* v);
bool take_lenenc_str(std::string_view& s, std::string_view* v);
bool take_cstr(std::string_view& s, std::string_view* v);  // NUL-terminated

struct Greeting {
  std::string_view version;
  uint64_t caps = 0;  // with MariaDB's extended flags when the server is MariaDB
};
bool parse_greeting(std::string_view p, Greeting* g);

struct HandshakeResponse {
  uint64_t caps = 0;
  bool ssl_request = false;  // only the 32 bytes of the SSL request: TLS follows
  std::string_view user;
  std::string_view database;  // empty unless CLIENT_CONNECT_WITH_DB
};
// The client's answer to the greeting (HandshakeResponse41; the auth data is skipped, never kept).
// False when it is not protocol 4.1 or does not parse.
bool parse_response(std::string_view p, HandshakeResponse* r);

// COM_CHANGE_USER: the user and the database it switches to.
bool parse_change_user(std::string_view p, uint64_t caps, std::string_view* user, std::string_view* database);

struct Ok {
  uint64_t affected = 0;
  uint64_t insert_id = 0;
  uint16_t status = 0;
};
// An OK packet (header 0x00 or, ending a result set under CLIENT_DEPRECATE_EOF, 0xfe).
bool parse_ok(std::string_view p, Ok* ok);
// An EOF packet: 0xfe, warnings, status (less than 9 bytes).
bool parse_eof(std::string_view p, uint16_t* status);
// 0xfe and shorter than a row could be: the end of a result set (EOF, or OK under DEPRECATE_EOF).
inline bool is_terminator(const Packet& p, bool deprecate_eof) {
  return p.first() == 0xfe && (deprecate_eof ? p.len < kMaxPayload : p.len < 9);
}

struct Err {
  uint16_t code = 0;
  std::string_view sqlstate;  // 5 characters, or empty before the handshake told protocol 4.1
  std::string_view message;
};
bool parse_err(std::string_view p, Err* e);

struct PrepareOk {
  uint32_t id = 0;
  uint16_t columns = 0;
  uint16_t params = 0;
};
bool parse_prepare_ok(std::string_view p, PrepareOk* ok);

// One parameter of a COM_STMT_EXECUTE as it was on the wire.
struct WireParam {
  uint8_t type = 6;  // enum_field_types; MYSQL_TYPE_NULL when never told
  bool is_unsigned = false;
  bool is_null = false;
  bool long_data = false;    // sent before by COM_STMT_SEND_LONG_DATA: no value in this packet
  bool have_value = false;   // the value was in the kept head (false: cut, or long data)
  std::string_view value;    // the value's bytes (length-encoded values: their content)
};

// Reads the parameters of a COM_STMT_EXECUTE payload `p` (its head, which may be cut) for a statement
// of `n` parameters. `types` (2 bytes a parameter: type, flags) holds the types the statement was last
// executed with: updated when this execution sends them again (new-params-bound flag). `long_data` bit
// i: parameter i had COM_STMT_SEND_LONG_DATA. `query_attrs`: the client sends the parameter count
// (MySQL 8's CLIENT_QUERY_ATTRIBUTES). Calls each(i, param) for i = 0..n-1 (as far as the types go).
// False when the packet does not fit the statement.
template <typename Each>
bool decode_execute(std::string_view p, uint16_t n, std::string& types, const std::string& long_data,
                    bool query_attrs, Each&& each);

// The width of a binary-protocol value of type t: >= 0 fixed bytes, -1 length-encoded, -2 a one-byte
// length (dates and times).
int binary_width(uint8_t t);

// --- template definition ---

template <typename Each>
bool decode_execute(std::string_view p, uint16_t n, std::string& types, const std::string& long_data,
                    bool query_attrs, Each&& each) {
  if (p.size() < 10) return false;
  uint8_t flags = static_cast<uint8_t>(p[5]);
  p.remove_prefix(10);  // command, statement id, flags, iteration count
  if (query_attrs && (flags & 0x08)) {  // PARAMETER_COUNT_AVAILABLE
    uint64_t c = 0;
    if (!take_lenenc(p, &c)) return false;
    if (c != n) return false;  // query attributes on an execute: not followed
  }
  if (n == 0) return true;
  size_t bitmap = (size_t(n) + 7) / 8;
  if (p.size() < bitmap + 1) return false;
  std::string_view nulls = p.substr(0, bitmap);
  bool bound = p[bitmap] == 1;
  p.remove_prefix(bitmap + 1);
  if (bound) {
    if (p.size() < 2 * size_t(n)) return false;
    types.assign(p.data(), 2 * size_t(n));
    p.remove_prefix(2 * size_t(n));
  }
  bool cut = false;
  for (uint16_t i = 0; i < n; ++i) {
    WireParam w;
    if (types.size() >= 2 * size_t(i) + 2) {
      w.type = static_cast<uint8_t>(types[2 * i]);
      w.is_unsigned = (static_cast<uint8_t>(types[2 * i + 1]) & 0x80) != 0;
    }
    w.long_data = i / 8 < long_data.size() && ((static_cast<uint8_t>(long_data[i / 8]) >> (i % 8)) & 1);
    // mysqlnd flags a long-data parameter NULL too; its value is what COM_STMT_SEND_LONG_DATA sent.
    w.is_null = !w.long_data && ((static_cast<uint8_t>(nulls[i / 8]) >> (i % 8)) & 1);
    if (!w.is_null && !w.long_data && !cut) {
      int width = binary_width(w.type);
      std::string_view v;
      bool got = false;
      if (width >= 0) {
        if (p.size() >= size_t(width)) {
          v = p.substr(0, width);
          p.remove_prefix(width);
          got = true;
        }
      } else if (width == -2) {
        if (!p.empty() && p.size() >= 1 + size_t(static_cast<uint8_t>(p[0]))) {
          v = p.substr(1, static_cast<uint8_t>(p[0]));
          p.remove_prefix(1 + v.size());
          got = true;
        }
      } else {
        got = take_lenenc_str(p, &v);
      }
      if (got) {
        w.value = v;
        w.have_value = true;
      } else {
        cut = true;  // the head was cut here (or the packet is short): no value from here on
      }
    }
    each(i, w);
  }
  return true;
}

}  // namespace txray::mysql
