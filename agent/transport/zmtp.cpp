#include "transport/zmtp.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cpu/clock.h"

namespace txray::transport {
namespace {

constexpr size_t kGreetingSize = 64;
constexpr uint8_t kFlagMore = 0x01, kFlagLong = 0x02, kFlagCommand = 0x04;

// Our greeting: signature (0xFF, 8 padding bytes, 0x7F), version 3.0, mechanism "NULL" padded to 20
// bytes, as-server 0, 31 bytes of filler.
void fill_greeting(uint8_t* g, bool curve) {
  std::memset(g, 0, kGreetingSize);
  g[0] = 0xFF;
  g[9] = 0x7F;
  g[10] = 3;
  g[11] = 0;
  if (curve) std::memcpy(g + 12, "CURVE", 5);  // as-server (g[32]) stays 0: the agent is the client
  else std::memcpy(g + 12, "NULL", 4);
}

// A frame's flags and size (short up to 255 bytes, else long); returns the head's length.
size_t frame_head(uint8_t flags, size_t n, uint8_t head[9]) {
  if (n <= 255) {
    head[0] = flags;
    head[1] = uint8_t(n);
    return 2;
  }
  head[0] = flags | kFlagLong;
  for (int i = 0; i < 8; ++i) head[1 + i] = uint8_t(uint64_t(n) >> (56 - 8 * i));
  return 9;
}

// The ZMTP properties of a PUSH socket: Socket-Type = PUSH (READY's body after its name, and CURVE's
// INITIATE metadata).
size_t fill_properties(uint8_t* out) {
  static const char kProp[] = "Socket-Type";
  static const char kType[] = "PUSH";
  size_t n = 0;
  out[n++] = uint8_t(sizeof kProp - 1);
  std::memcpy(out + n, kProp, sizeof kProp - 1);
  n += sizeof kProp - 1;
  uint32_t vl = sizeof kType - 1;
  out[n++] = uint8_t(vl >> 24);
  out[n++] = uint8_t(vl >> 16);
  out[n++] = uint8_t(vl >> 8);
  out[n++] = uint8_t(vl);
  std::memcpy(out + n, kType, vl);
  return n + vl;
}

// The NULL mechanism's READY command with the one property a PULL peer checks: Socket-Type = PUSH.
size_t fill_ready(uint8_t* out) {
  static const char kName[] = "READY";
  uint8_t body[64];
  size_t n = 0;
  body[n++] = uint8_t(sizeof kName - 1);
  std::memcpy(body + n, kName, sizeof kName - 1);
  n += sizeof kName - 1;
  n += fill_properties(body + n);
  out[0] = kFlagCommand;
  out[1] = uint8_t(n);
  std::memcpy(out + 2, body, n);
  return n + 2;
}

std::string socket_type_of(const uint8_t* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t nl = p[i++];
    if (i + nl + 4 > n) break;
    std::string name(reinterpret_cast<const char*>(p + i), nl);
    i += nl;
    size_t vl = (size_t(p[i]) << 24) | (size_t(p[i + 1]) << 16) | (size_t(p[i + 2]) << 8) | size_t(p[i + 3]);
    i += 4;
    if (i + vl > n) break;
    if (strcasecmp(name.c_str(), "Socket-Type") == 0) return std::string(reinterpret_cast<const char*>(p + i), vl);
    i += vl;
  }
  return "";
}

int remaining_ms(uint64_t deadline_ns) {
  uint64_t now = clock::mono_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999'999) / 1'000'000;
  return ms > 60'000 ? 60'000 : int(ms);
}

}  // namespace

bool parse_endpoint(const std::string& text, Endpoint* out, std::string* err) {
  *out = Endpoint{};
  if (text.rfind("ipc://", 0) == 0) {
    out->ipc = true;
    out->path = text.substr(6);
    size_t max = sizeof(sockaddr_un{}.sun_path) - 1;
    if (out->path.empty() || out->path.size() > max) {
      *err = "ipc:// path is empty or longer than " + std::to_string(max) + " bytes";
      return false;
    }
    return true;
  }
  if (text.rfind("tcp://", 0) == 0) {
    std::string rest = text.substr(6);
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
      *err = "tcp:// endpoint needs HOST:PORT";
      return false;
    }
    out->host = rest.substr(0, colon);
    out->port = rest.substr(colon + 1);
    if (out->host.size() > 2 && out->host.front() == '[' && out->host.back() == ']')
      out->host = out->host.substr(1, out->host.size() - 2);
    if (out->host == "*") {
      *err = "tcp://*:PORT is an address to listen on, not one to connect to";
      return false;
    }
    for (char c : out->port)
      if (c < '0' || c > '9') {
        *err = "tcp:// port is not a number";
        return false;
      }
    return true;
  }
  *err = "endpoint is neither tcp://HOST:PORT nor ipc://PATH";
  return false;
}

bool ZmtpPush::fail(const char* why) {
  error_ = why;
  close();
  return false;
}

void ZmtpPush::close() {
  if (fd_ >= 0) release_fd(fd_);
  fd_ = -1;
}

bool ZmtpPush::wait(short events, uint64_t deadline_ns) {
  for (;;) {
    pollfd p{fd_, events, 0};
    int r = poll(&p, 1, remaining_ms(deadline_ns));
    if (r > 0) return true;  // ready, or an error the next call will report
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

bool ZmtpPush::connect_to(const sockaddr* sa, socklen_t len, uint64_t deadline_ns) {
  fd_ = open_own_socket(sa->sa_family);
  if (fd_ < 0) {
    descriptor_trouble_ = true;
    if (errno == EAGAIN) return fail("the program closed descriptors while the agent made its own; retrying");
    return fail("no free descriptor for the collector connection (descriptor table full)");
  }
  if (sa->sa_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (::connect(fd_, sa, len) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) return fail("connection refused");
    if (!wait(POLLOUT, deadline_ns)) return fail("connection timed out");
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) return fail("connection refused");
  }
  if (!file_id(fd_, &id_)) return fail("connection descriptor vanished");
  return true;
}

namespace {
// ep.host as an IPv4 or IPv6 literal with ep.port; false when it is a name (or the port is not a number).
bool numeric_address(const Endpoint& ep, sockaddr_storage* ss) {
  char* end = nullptr;
  unsigned long port = std::strtoul(ep.port.c_str(), &end, 10);
  if (ep.port.empty() || *end != '\0' || port > 65535) return false;
  std::string_view h = ep.host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  char host[INET6_ADDRSTRLEN];
  if (h.empty() || h.size() >= sizeof host) return false;
  std::memcpy(host, h.data(), h.size());
  host[h.size()] = '\0';
  auto* in = reinterpret_cast<sockaddr_in*>(ss);
  if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons(uint16_t(port));
    return true;
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(ss);
  if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(uint16_t(port));
    return true;
  }
  return false;
}
}  // namespace

bool ZmtpPush::open(const Endpoint& ep, uint64_t deadline_ns, uint64_t handshake_deadline_ns) {
  close();
  error_ = "";
  descriptor_trouble_ = false;
  if (ep.ipc) {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, ep.path.data(), ep.path.size());
    if (ep.path[0] == '@') un.sun_path[0] = '\0';  // abstract namespace
    socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + ep.path.size() + (ep.path[0] == '@' ? 0 : 1));
    if (!connect_to(reinterpret_cast<sockaddr*>(&un), len, deadline_ns)) return false;
  } else if (sockaddr_storage ss{}; numeric_address(ep, &ss)) {
    // An address literal (the usual case, 127.0.0.1): no getaddrinfo, which asks the kernel for the
    // machine's interfaces over netlink and costs a forked child's exit several page faults.
    socklen_t len = ss.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (!connect_to(reinterpret_cast<sockaddr*>(&ss), len, deadline_ns)) return false;
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    if (getaddrinfo(ep.host.c_str(), ep.port.c_str(), &hints, &res) != 0 || !res) {
      error_ = "cannot resolve the collector's host";
      return false;
    }
    bool ok = false;
    for (addrinfo* a = res; a && !ok; a = a->ai_next) ok = connect_to(a->ai_addr, a->ai_addrlen, deadline_ns);
    freeaddrinfo(res);
    if (!ok) return false;
  }
  return handshake(handshake_deadline_ns ? handshake_deadline_ns : deadline_ns);
}

void ZmtpPush::use_curve(const uint8_t server_public[32], const uint8_t client_public[32],
                         const uint8_t client_secret[32]) {
  std::memcpy(curve_keys_, server_public, 32);
  std::memcpy(curve_keys_ + 32, client_public, 32);
  std::memcpy(curve_keys_ + 64, client_secret, 32);
  curve_on_ = true;
}

// A command frame (short or long) with `body`.
bool ZmtpPush::write_command(const void* body, size_t n, uint64_t deadline_ns) {
  uint8_t head[9];
  return write_all(head, frame_head(kFlagCommand, n, head), body, n, deadline_ns);
}

// Sends `mine` (this side's greeting, maybe with a first command after it) and checks the collector's
// greeting: ZMTP 3.x with `mechanism`; `mismatch` is the failure when the mechanism differs.
bool ZmtpPush::greet(const uint8_t* mine, size_t n, const char* mechanism, const char* mismatch,
                     uint64_t deadline_ns) {
  if (!write_all(mine, n, nullptr, 0, deadline_ns)) return false;
  uint8_t peer[kGreetingSize];
  if (!read_exact(peer, kGreetingSize, deadline_ns)) return false;
  if (peer[0] != 0xFF || peer[9] != 0x7F) return fail("the collector endpoint does not speak ZMTP");
  if (peer[10] < 3) return fail("the collector speaks a ZMTP older than 3.0");
  size_t ml = std::strlen(mechanism);
  if (std::memcmp(peer + 12, mechanism, ml) != 0 || peer[12 + ml] != 0) return fail(mismatch);
  return true;
}

// The next frame, which must be a command of at most `cap` bytes.
bool ZmtpPush::read_command(uint8_t* body, size_t cap, size_t* n, uint64_t deadline_ns) {
  uint8_t flags;
  if (!read_exact(&flags, 1, deadline_ns)) return false;
  if (!(flags & kFlagCommand)) return fail("unexpected frame from the collector during the handshake");
  uint64_t len = 0;
  if (flags & kFlagLong) {
    uint8_t l8[8];
    if (!read_exact(l8, 8, deadline_ns)) return false;
    for (int i = 0; i < 8; ++i) len = (len << 8) | l8[i];
  } else {
    uint8_t l1;
    if (!read_exact(&l1, 1, deadline_ns)) return false;
    len = l1;
  }
  if (len == 0 || len > cap) return fail("malformed command from the collector");
  if (!read_exact(body, size_t(len), deadline_ns)) return false;
  *n = size_t(len);
  if (len >= 6 && std::memcmp(body, "\x05" "ERROR", 6) == 0) return fail("the collector refused the handshake");
  return true;
}

// CurveZMQ as the client: greeting, HELLO, WELCOME, INITIATE, READY (curve_client.h).
bool ZmtpPush::handshake_curve(uint64_t deadline_ns) {
  curve_ = CurveClient{};
  if (!curve_.init(curve_keys_, curve_keys_ + 32, curve_keys_ + 64)) return fail("libsodium unusable");
  uint8_t mine[kGreetingSize];
  fill_greeting(mine, true);
  if (!greet(mine, kGreetingSize, "CURVE", "the collector does not use CURVE (TXRAY_SERVER_KEY is set)", deadline_ns))
    return false;
  uint8_t hello[CurveClient::kHelloSize];
  if (!curve_.hello(hello) || !write_command(hello, sizeof hello, deadline_ns)) return fail("cannot send HELLO");
  uint8_t body[512];
  size_t n = 0;
  if (!read_command(body, sizeof body, &n, deadline_ns)) return false;
  if (!curve_.welcome(body, n)) return fail("the collector's WELCOME does not open with TXRAY_SERVER_KEY");
  uint8_t props[64];
  size_t pn = fill_properties(props);
  std::string initiate;
  if (!curve_.initiate(props, pn, &initiate) || !write_command(initiate.data(), initiate.size(), deadline_ns))
    return fail("cannot send INITIATE");
  if (!read_command(body, sizeof body, &n, deadline_ns)) return false;
  std::string meta;
  if (!curve_.ready(body, n, &meta)) return fail("the collector refused this agent's key");
  peer_type_ = socket_type_of(reinterpret_cast<const uint8_t*>(meta.data()), meta.size());
  if (strcasecmp(peer_type_.c_str(), "PULL") != 0) return fail("the collector endpoint is not a PULL socket");
  return true;
}

bool ZmtpPush::handshake(uint64_t deadline_ns) {
  if (curve_on_) return handshake_curve(deadline_ns);
  uint8_t mine[kGreetingSize + 64];
  fill_greeting(mine, false);
  size_t n = kGreetingSize + fill_ready(mine + kGreetingSize);
  if (!greet(mine, n, "NULL", "the collector asks for a security mechanism", deadline_ns)) return false;
  uint8_t flags, len1;
  if (!read_exact(&flags, 1, deadline_ns)) return false;
  if (!(flags & kFlagCommand) || (flags & kFlagLong)) return fail("unexpected first frame from the collector");
  if (!read_exact(&len1, 1, deadline_ns)) return false;
  uint8_t body[256];
  if (len1 == 0 || !read_exact(body, len1, deadline_ns)) return fail("empty command from the collector");
  size_t name_len = body[0];
  if (name_len + 1 > len1) return fail("malformed command from the collector");
  if (name_len == 5 && std::memcmp(body + 1, "ERROR", 5) == 0) return fail("the collector refused the handshake");
  if (name_len != 5 || std::memcmp(body + 1, "READY", 5) != 0) return fail("unexpected command from the collector");
  peer_type_ = socket_type_of(body + 1 + name_len, len1 - 1 - name_len);
  if (strcasecmp(peer_type_.c_str(), "PULL") != 0) return fail("the collector endpoint is not a PULL socket");
  return true;
}

bool ZmtpPush::write_all(const void* a, size_t an, const void* b, size_t bn, uint64_t deadline_ns) {
  iovec v[2] = {{const_cast<void*>(a), an}, {const_cast<void*>(b), bn}};
  int cnt = bn ? 2 : 1;
  iovec* iv = v;
  while (cnt > 0) {
    msghdr m{};
    m.msg_iov = iv;
    m.msg_iovlen = size_t(cnt);
    ssize_t w = ::sendmsg(fd_, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return fail("the collector closed the connection");
      if (!wait(POLLOUT, deadline_ns)) return fail("the collector did not take the data in time");
      continue;
    }
    size_t done = size_t(w);
    while (cnt > 0 && done >= iv->iov_len) {
      done -= iv->iov_len;
      ++iv;
      --cnt;
    }
    if (cnt > 0) {
      iv->iov_base = static_cast<char*>(iv->iov_base) + done;
      iv->iov_len -= done;
    }
  }
  return true;
}

bool ZmtpPush::read_exact(void* buf, size_t n, uint64_t deadline_ns) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::recv(fd_, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= size_t(r);
      continue;
    }
    if (r == 0) return fail("the collector closed the connection");
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return fail("the collector closed the connection");
    if (!wait(POLLIN, deadline_ns)) return fail("no answer from the collector in time");
  }
  return true;
}

bool ZmtpPush::check() {
  if (fd_ < 0) return false;
  if (!still_same(fd_, id_)) {
    // Closed or replaced behind the hooks (a raw system call): the number is the program's now.
    disown_fd(fd_);
    fd_ = -1;
    error_ = "the program closed or replaced the agent's descriptor";
    descriptor_trouble_ = true;
    return false;
  }
  // A PULL peer sends nothing after its READY: readable means it closed (or reset) the connection.
  char scratch[256];
  for (;;) {
    ssize_t r = ::recv(fd_, scratch, sizeof scratch, MSG_DONTWAIT);
    if (r > 0) continue;  // tolerate and discard
    if (r == 0) return fail("the collector closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return true;
    return fail("the collector connection failed");
  }
}

bool ZmtpPush::send(const void* data, size_t n, uint64_t deadline_ns) {
  if (fd_ < 0) return false;
  if (curve_on_) {  // the message travels as the body of a MESSAGE (a data frame)
    if (!curve_.seal(data, n, &sealed_)) return fail("cannot encrypt");
    data = sealed_.data();
    n = sealed_.size();
  }
  uint8_t head[9];
  static_assert(kFlagMore == 1, "single-frame messages never set MORE");
  return write_all(head, frame_head(0, n, head), data, n, deadline_ns);
}

}  // namespace txray::transport
