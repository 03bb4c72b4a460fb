#include "protocols/mysql/mysql_wire.h"

#include <algorithm>
#include <cstring>

namespace txray::mysql {

// --- framing ---

void Framer::reset() {
  hdr_n_ = 0;
  in_packet_ = began_ = continued_ = false;
  left_ = phys_len_ = 0;
  total_ = 0;
  keep_ = 0;
  std::string().swap(head_);
  fed_ = start_ = 0;
}

bool Framer::start(PacketSink& sink, int first) {
  began_ = true;
  keep_ = std::max<size_t>(1, sink.begin(seq_, phys_len_, first));  // the first byte tells the packet
  return true;
}

bool Framer::finish(PacketSink& sink, std::string_view head) {
  Packet pk{.seq = seq_, .last_seq = last_seq_, .len = total_, .head = head};
  in_packet_ = began_ = continued_ = false;
  hdr_n_ = 0;
  bool go = sink.packet(pk);
  head_.clear();
  if (head_.capacity() > 16384) std::string().swap(head_);  // a big statement's text is not held on to
  return go;
}

bool Framer::feed(const char* p, size_t n, PacketSink& sink) {
  fed_ += n;
  if (!feed_packets(p, n, sink)) return false;  // call_left_ stays: what the stop did not take
  call_left_ = 0;
  return true;
}

bool Framer::feed_packets(const char* p, size_t n, PacketSink& sink) {
  while (n > 0) {
    // A whole packet, header and all, in what is left of this call and needing no continuation (the
    // common case: a command in one write, a result set in one read): the sink reads it in place.
    if (hdr_n_ == 0 && !in_packet_ && n >= 4) {
      const auto* u = reinterpret_cast<const unsigned char*>(p);
      uint32_t len = uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16;
      if (len < kMaxPayload && n - 4 >= len) {
        start_ = fed_ - n;
        seq_ = last_seq_ = u[3];
        phys_len_ = len;
        total_ = len;
        left_ = 0;
        continued_ = false;
        in_packet_ = true;
        start(sink, len ? int(u[4]) : -1);
        std::string_view head(p + 4, std::min<size_t>(len, keep_));
        p += 4 + size_t(len);
        n -= 4 + size_t(len);
        call_left_ = n;
        if (!finish(sink, head)) return false;
        continue;
      }
    }
    if (hdr_n_ < 4) {
      if (hdr_n_ == 0 && !in_packet_) start_ = fed_ - n;
      size_t k = std::min<size_t>(4 - hdr_n_, n);
      std::memcpy(hdr_ + hdr_n_, p, k);
      hdr_n_ = uint8_t(hdr_n_ + k);
      p += k;
      n -= k;
      if (hdr_n_ < 4) return true;
      uint32_t len = uint32_t(hdr_[0]) | uint32_t(hdr_[1]) << 8 | uint32_t(hdr_[2]) << 16;
      uint8_t seq = hdr_[3];
      if (!in_packet_) {
        in_packet_ = true;
        began_ = false;
        seq_ = seq;
        total_ = 0;
        head_.clear();
      } else if (seq != uint8_t(last_seq_ + 1)) {
        call_left_ = n;
        return false;  // a continuation out of sequence: the framing is lost
      }
      last_seq_ = seq;
      phys_len_ = len;
      left_ = len;
      continued_ = len == kMaxPayload;
      if (len == 0) {
        if (!began_) start(sink, -1);
        call_left_ = n;
        if (!finish(sink, head_)) return false;
      }
      continue;
    }
    if (!began_) {
      start(sink, static_cast<unsigned char>(p[0]));
      // The whole packet in this call: the sink reads it where it is, no copy.
      if (!continued_ && n >= left_) {
        size_t k = left_;
        total_ = k;
        left_ = 0;
        std::string_view head(p, std::min(k, keep_));
        p += k;
        n -= k;
        call_left_ = n;
        if (!finish(sink, head)) return false;
        continue;
      }
    }
    size_t take = std::min<size_t>(left_, n);
    if (head_.size() < keep_) head_.append(p, std::min(take, keep_ - head_.size()));
    total_ += take;
    left_ = uint32_t(left_ - take);
    p += take;
    n -= take;
    if (left_ == 0) {
      hdr_n_ = 0;
      call_left_ = n;
      if (!continued_ && !finish(sink, head_)) return false;
    }
  }
  return true;
}

// --- values ---

bool take_int(std::string_view& s, size_t bytes, uint64_t* v) {
  if (bytes > 8 || s.size() < bytes) return false;
  uint64_t x = 0;
  for (size_t i = 0; i < bytes; ++i) x |= uint64_t(static_cast<unsigned char>(s[i])) << (8 * i);
  s.remove_prefix(bytes);
  *v = x;
  return true;
}

namespace {
bool skip(std::string_view& s, size_t n) {
  if (s.size() < n) return false;
  s.remove_prefix(n);
  return true;
}
}  // namespace

bool take_lenenc(std::string_view& s, uint64_t* v) {
  if (s.empty()) return false;
  unsigned char c = static_cast<unsigned char>(s[0]);
  if (c < 0xfb) {
    *v = c;
    s.remove_prefix(1);
    return true;
  }
  size_t w = c == 0xfc ? 2 : c == 0xfd ? 3 : c == 0xfe ? 8 : 0;
  if (w == 0 || s.size() < 1 + w) return false;
  s.remove_prefix(1);
  return take_int(s, w, v);
}

bool take_lenenc_str(std::string_view& s, std::string_view* v) {
  std::string_view t = s;
  uint64_t len = 0;
  if (!take_lenenc(t, &len) || len > t.size()) return false;
  *v = t.substr(0, size_t(len));
  t.remove_prefix(size_t(len));
  s = t;
  return true;
}

bool take_cstr(std::string_view& s, std::string_view* v) {
  size_t z = s.find('\0');
  if (z == std::string_view::npos) return false;
  *v = s.substr(0, z);
  s.remove_prefix(z + 1);
  return true;
}

// --- handshake ---

bool parse_greeting(std::string_view p, Greeting* g) {
  uint64_t v = 0;
  if (!take_int(p, 1, &v) || v != 10) return false;
  if (!take_cstr(p, &g->version)) return false;
  if (!skip(p, 4 + 8 + 1)) return false;  // connection id, scramble part 1, filler
  uint64_t lo = 0, hi = 0, ext = 0;
  if (!take_int(p, 2, &lo)) return false;
  g->caps = lo;
  if (p.empty()) return true;  // a pre-4.1 server stops here
  if (!skip(p, 1 + 2) || !take_int(p, 2, &hi)) return false;  // charset, status, caps upper
  g->caps |= hi << 16;
  if (!skip(p, 1 + 6) || !take_int(p, 4, &ext)) return false;  // scramble length, reserved
  if (!(g->caps & cap::kMysql)) g->caps |= ext << 32;  // MariaDB: its extended capabilities
  return true;
}

bool parse_response(std::string_view p, HandshakeResponse* r) {
  uint64_t caps = 0, v = 0, ext = 0;
  if (!take_int(p, 4, &caps) || !(caps & cap::kProtocol41)) return false;
  if (!skip(p, 4 + 1 + 19) || !take_int(p, 4, &ext)) return false;  // max packet, charset, filler
  r->caps = caps | (caps & cap::kMysql ? 0 : ext << 32);
  if (p.empty()) {
    r->ssl_request = (caps & cap::kSsl) != 0;
    return r->ssl_request;
  }
  r->ssl_request = false;
  if (!take_cstr(p, &r->user)) return false;
  std::string_view auth;
  if (caps & cap::kPluginAuthLenencData) {
    if (!take_lenenc_str(p, &auth)) return false;
  } else if (caps & cap::kSecureConnection) {
    if (!take_int(p, 1, &v) || v > p.size()) return false;
    p.remove_prefix(size_t(v));
  } else if (!take_cstr(p, &auth)) {
    return false;
  }
  r->database = {};
  if (caps & cap::kConnectWithDb) {
    // Some clients end the packet right after the database without its NUL.
    if (!take_cstr(p, &r->database)) {
      r->database = p;
      p = {};
    }
  }
  return true;
}

bool parse_change_user(std::string_view p, uint64_t caps, std::string_view* user, std::string_view* database) {
  p.remove_prefix(std::min<size_t>(1, p.size()));
  if (!take_cstr(p, user)) return false;
  uint64_t v = 0;
  if (caps & cap::kSecureConnection) {
    if (!take_int(p, 1, &v) || v > p.size()) return false;
    p.remove_prefix(size_t(v));
  } else {
    std::string_view auth;
    if (!take_cstr(p, &auth)) return false;
  }
  if (!take_cstr(p, database)) {
    *database = p;
  }
  return true;
}

// --- replies ---

bool parse_ok(std::string_view p, Ok* ok) {
  if (p.empty() || (p[0] != 0 && static_cast<unsigned char>(p[0]) != 0xfe)) return false;
  p.remove_prefix(1);
  uint64_t st = 0;
  if (!take_lenenc(p, &ok->affected) || !take_lenenc(p, &ok->insert_id) || !take_int(p, 2, &st)) return false;
  ok->status = uint16_t(st);
  return true;
}

bool parse_eof(std::string_view p, uint16_t* status) {
  uint64_t v = 0;
  if (p.size() < 5 || static_cast<unsigned char>(p[0]) != 0xfe) return false;
  p.remove_prefix(3);  // header, warnings
  if (!take_int(p, 2, &v)) return false;
  *status = uint16_t(v);
  return true;
}

bool parse_err(std::string_view p, Err* e) {
  uint64_t code = 0;
  if (p.empty() || static_cast<unsigned char>(p[0]) != 0xff) return false;
  p.remove_prefix(1);
  if (!take_int(p, 2, &code)) return false;
  e->code = uint16_t(code);
  e->sqlstate = {};
  if (!p.empty() && p[0] == '#' && p.size() >= 6) {
    e->sqlstate = p.substr(1, 5);
    p.remove_prefix(6);
  }
  e->message = p;
  return true;
}

bool parse_prepare_ok(std::string_view p, PrepareOk* ok) {
  uint64_t id = 0, cols = 0, params = 0;
  if (p.size() < 9 || p[0] != 0) return false;
  p.remove_prefix(1);
  if (!take_int(p, 4, &id) || !take_int(p, 2, &cols) || !take_int(p, 2, &params)) return false;
  ok->id = uint32_t(id);
  ok->columns = uint16_t(cols);
  ok->params = uint16_t(params);
  return true;
}

int binary_width(uint8_t t) {
  switch (t) {
    case 1: return 1;                   // TINY
    case 2: case 13: return 2;          // SHORT, YEAR
    case 3: case 9: case 4: return 4;   // LONG, INT24, FLOAT
    case 5: case 8: return 8;           // DOUBLE, LONGLONG
    case 6: return 0;                   // NULL
    case 7: case 10: case 11: case 12: case 14: return -2;  // TIMESTAMP, DATE, TIME, DATETIME, NEWDATE
    default: return -1;                 // strings, decimals, blobs, bit, json, geometry: length-encoded
  }
}

}  // namespace txray::mysql
