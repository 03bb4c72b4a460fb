// TLS through OpenSSL 3: SSL_write/SSL_read (and their _ex forms) of a client connection carry the
// plaintext of HTTPS, so the same client tracker as for plain sockets (agent/protocols/http1/http_client.h)
// turns them into HTTP_CALL rows with scheme https. Rows carry the plaintext bytes (bytes_read /
// bytes_written) and the TLS bytes on the wire over the call (attributes wire_bytes_read /
// wire_bytes_written, from the connection's BIO counters). The socket rows underneath count wire bytes
// as always.
//
// HTTP/2 over TLS (ALPN h2): a connection whose first plaintext is the client preface is followed by the
// HTTP/2 trackers instead (docs/http2.md): a client's streams become rows (scheme https, gRPC calls
// marked), and a *server's* streams become transactions — the one case where TLS servers are followed
// (HTTP/1.x over a TLS server is not).
//
// PostgreSQL and MySQL connections that switched to TLS after their first plaintext bytes: the plaintext
// goes to the socket's wire client (protocols/dispatch/wire_client.h), which makes its SQL rows. The
// handshake and the shutdown are hooked too (no rows) so that all of libssl's own socket I/O runs with
// the tls family held: records passing such a socket outside it are TLS the agent cannot read.
//
// Not here: HTTP/1.x servers, and anything while a libcurl hook runs (curl's own hook records the
// transfer; the http_call hook family is then held).
//
// traceparent over TLS, HTTP/2 clients only (h2_tls_write): a write holding HEADERS frames of new
// requests is made from a buffer of the agent's own, W = the program's plaintext with the HPACK fields
// inserted (as for cleartext, docs/http2.md). OpenSSL wants a write that failed with WANT_WRITE/WANT_READ
// retried with the same buffer: W is kept, unchanged at the same address, until all of it is written,
// and the program's retry (OpenSSL requires it to offer the same bytes again) continues W. The program
// is told its own count when all of W went out, and the real call's failure value otherwise — what it
// would have seen without the agent. W never needs more TLS records than the program's bytes would
// (16 KiB each): a program feeding OpenSSL through a memory BIO sized for its own writes (gRPC's C core)
// never finds it full because of the agent. No header is inserted into HTTP/1.x over TLS.
//
// State per SSL object hangs off OpenSSL's own ex_data slot and is freed with the SSL object; libssl
// is not linked: its functions are found at run time (RTLD_NEXT, else the loaded libssl.so.3).
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "core/config.h"
#include "protocols/http2/h2_conn.h"
#include "protocols/http2/h2_frames.h"
#include "protocols/http2/h2_inject.h"
#include "protocols/http1/http_client.h"
#include "protocols/dispatch/http_out.h"
#include "protocols/tracecontext/context.h"
#include "core/span_owner.h"
#include "core/recorder.h"
#include "hooks/hook.h"

namespace {

constexpr const char* kSsl = "libssl.so.3";
constexpr const char* kCrypto = "libcrypto.so.3";

// HTTP_CALL rows for one TLS connection, with the wire bytes of each call.
class TlsSink final : public txray::CallSink {
 public:
  SSL* ssl = nullptr;
  const txray::HttpClientTracker* tracker = nullptr;
  uint64_t wire_r0 = 0, wire_w0 = 0;  // BIO counters when the oldest outstanding call started

  // Called before a write: when no call is under way, the next request starts counting here.
  void before_write() {
    if (tracker->outstanding() == 0 && !tracker->request_in_progress()) wire(&wire_r0, &wire_w0);
  }

  void wire(uint64_t* r, uint64_t* w) {
    auto get_rbio = TXRAY_REAL(SSL_get_rbio, kSsl);
    auto get_wbio = TXRAY_REAL(SSL_get_wbio, kSsl);
    auto nread = TXRAY_REAL(BIO_number_read, kCrypto);
    auto nwritten = TXRAY_REAL(BIO_number_written, kCrypto);
    *r = *w = 0;
    if (!get_rbio || !get_wbio || !nread || !nwritten) return;
    if (BIO* b = get_rbio(ssl)) *r = nread(b);
    if (BIO* b = get_wbio(ssl)) *w = nwritten(b);
  }
  void on_response(txray::HttpCall& c, std::string_view error) override {
    uint64_t r, w;
    wire(&r, &w);
    char v[24];
    snprintf(v, sizeof v, "%llu", static_cast<unsigned long long>(r - wire_r0));
    txray::rec::add_attr(c.step, "wire_bytes_read", v);
    snprintf(v, sizeof v, "%llu", static_cast<unsigned long long>(w - wire_w0));
    txray::rec::add_attr(c.step, "wire_bytes_written", v);
    wire_r0 = r;
    wire_w0 = w;
    CallSink::on_response(c, error);
  }
};

// A client's HTTP/2 write with traceparent fields, being written (h2_tls_write).
struct TlsH2Write {
  static constexpr size_t kMax = txray::H2WholeWrite::kMaxEdits;
  txray::H2WholeWrite w;
  uint32_t streams[kMax];
  uint64_t spans[kMax];
  std::string scratch;  // plan_insert's
};

struct TlsConn {
  txray::HttpClientTracker tracker;
  TlsSink sink;
  bool server = false;
  bool fresh = true;       // no plaintext seen yet: the first bytes tell HTTP/2 from the rest
  bool h2_active = false;  // HTTP/2: h2 (client) or h2_server (server) follows the connection
  // A database connection that switched to TLS (PostgreSQL's SSLRequest, MySQL's SSL request): its
  // plaintext goes to the socket's wire client (http_out::tls_plaintext), not to the HTTP trackers.
  int wire_fd = -1;
  txray::H2Client* h2 = nullptr;
  txray::H2Sink h2_sink;
  txray::H2Server* h2_server = nullptr;
  TlsH2Write* h2w = nullptr;
  explicit TlsConn(SSL* s, bool is_server) : server(is_server) {
    sink.scheme = "https";
    sink.ssl = s;
    sink.tracker = &tracker;
    h2_sink.scheme = "https";
  }
  ~TlsConn() {
    delete h2;
    delete h2_server;
    delete h2w;
  }
};

// The peer of the SSL object's socket as "ip:port" (a server's client), or "".
void peer_of(SSL* ssl, char* out, size_t cap) {
  out[0] = 0;
  auto get_fd = TXRAY_REAL(SSL_get_fd, kSsl);
  int fd = get_fd ? get_fd(ssl) : -1;
  if (fd < 0) return;
  sockaddr_storage ss;
  socklen_t l = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &l) != 0) return;
  char ip[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    snprintf(out, cap, "%s:%d", ip, ntohs(in->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    snprintf(out, cap, "%s:%d", ip, ntohs(in6->sin6_port));
  }
}

// The first plaintext the client sends (a client's first write, a server's first read): HTTP/2 when it
// is the client preface. A server may write its SETTINGS before it reads the preface: its writes before
// then are not looked at (they are whole frames without header blocks, so its frame reader starts at a
// frame boundary).
void classify(TlsConn* c, SSL* ssl, const void* buf, size_t n, bool read) {
  if (!c->fresh || n == 0 || read != c->server) return;
  c->fresh = false;
  if (!c->server) {
    auto get_fd = TXRAY_REAL(SSL_get_fd, kSsl);
    int fd = get_fd ? get_fd(ssl) : -1;
    if (fd >= 0 && (txray::http_out::tls_wire(fd) ||
                    txray::http_out::tls_first_plaintext(fd, static_cast<const char*>(buf), n))) {
      c->wire_fd = fd;
      c->tracker.make_opaque();
      return;
    }
  }
  // HTTP/1.x (clients only) or else; "PRI " tells the preface from POST, PUT, PATCH.
  if (n < 4 || txray::h2::match_preface(static_cast<const char*>(buf), n) < 0) return;
  if (c->server) {
    if (txray::config().mode != txray::Mode::http) return;
    if (!c->h2_server) c->h2_server = new (std::nothrow) txray::H2Server;
    if (!c->h2_server) return;
    char peer[INET6_ADDRSTRLEN + 16];
    peer_of(ssl, peer, sizeof peer);
    c->h2_server->reset(peer);
  } else {
    if (!c->h2) c->h2 = new (std::nothrow) txray::H2Client;
    if (!c->h2) return;
    c->h2->reset();
  }
  c->h2_active = true;
}

// The SSL object is being freed: its unfinished calls end here.
void free_conn(void* parent, void* ptr, CRYPTO_EX_DATA* ad, int idx, long argl, void* argp) {
  auto* c = static_cast<TlsConn*>(ptr);
  if (!c) return;
  int saved = errno;
  bool on = txray::host_thread_enabled();
  if (c->h2_active && c->h2 && on) c->h2->on_end(c->h2_sink, "TLS connection freed before the response ended");
  if (c->h2_server) {
    if (on) c->h2_server->on_close();
    else c->h2_server->forget();
  }
  if (on && !c->h2_active && !c->server && !c->tracker.opaque())
    c->tracker.on_end(c->sink, "TLS connection freed before the response ended");
  delete c;
  errno = saved;
}

std::atomic<int> g_index{-2};  // -2: not asked yet, -1: unavailable

int ex_index() {
  int i = g_index.load(std::memory_order_acquire);
  if (i != -2) return i;
  auto new_index = TXRAY_REAL(CRYPTO_get_ex_new_index, kCrypto);
  int got = new_index ? new_index(CRYPTO_EX_INDEX_SSL, 0, nullptr, nullptr, nullptr, free_conn) : -1;
  int expected = -2;
  if (!g_index.compare_exchange_strong(expected, got)) return expected;  // another thread won
  return got;
}

// The state of an SSL object, created on its first write (client) or read; nullptr on failure.
TlsConn* conn_of(SSL* ssl, bool create) {
  int idx = ex_index();
  auto get = TXRAY_REAL(SSL_get_ex_data, kSsl);
  auto set = TXRAY_REAL(SSL_set_ex_data, kSsl);
  auto is_server = TXRAY_REAL(SSL_is_server, kSsl);
  if (idx < 0 || !get || !set || !is_server || !ssl) return nullptr;
  auto* c = static_cast<TlsConn*>(get(ssl, idx));
  if (c || !create) return c;
  c = new (std::nothrow) TlsConn(ssl, is_server(ssl) == 1);
  if (c && set(ssl, idx, c) != 1) {
    delete c;
    c = nullptr;
  }
  return c;
}

// Whether a TLS hook should look at this call at all.
bool watching(const txray::HookGuard& guard) {
  return guard && !(txray::hooks::t_in_family & (1u << static_cast<unsigned>(txray::HookFamily::http_call)));
}

// Before a write of the program's: the connection's state (created on its first write). A client's
// first plaintext is classified here, before it goes out, so that its HEADERS frames can get a field.
TlsConn* before_write(SSL* ssl, const void* buf, size_t n) {
  txray::SaveErrno keep;
  TlsConn* c = conn_of(ssl, true);
  if (c && !c->server) classify(c, ssl, buf, n, false);
  if (c && !c->server && !c->h2_active && !c->tracker.opaque()) c->sink.before_write();
  return c;
}

// The connection's state when a write with fields (W) is pending on it, else nullptr.
TlsConn* pending_conn(SSL* ssl) {
  txray::SaveErrno keep;
  TlsConn* c = conn_of(ssl, false);
  return (c && c->h2w && c->h2w->w.pending()) ? c : nullptr;
}

// The real SSL_write (len <= INT_MAX) or SSL_write_ex: > 0 = bytes taken, else the value the program's
// call returns on failure (-1/0 for SSL_write, 0 for SSL_write_ex).
struct RealWrite {
  int (*write)(SSL*, const void*, int) = nullptr;
  int (*write_ex)(SSL*, const void*, size_t, size_t*) = nullptr;
  long operator()(SSL* ssl, const char* p, size_t len) const {
    if (write) return write(ssl, p, static_cast<int>(std::min<size_t>(len, INT_MAX)));
    size_t w = 0;
    return write_ex(ssl, p, len, &w) == 1 ? static_cast<long>(w) : 0;
  }
};

// Writes what is left of W. True with *result = the program's count when all of it went out, else the
// real call's failure value (W stays pending for the program's retry).
bool h2_tls_continue(TlsConn* c, SSL* ssl, size_t num, const RealWrite& real, long* result) {
  txray::H2WholeWrite& w = c->h2w->w;
  while (w.pending()) {
    long r = real(ssl, w.rest(), w.rest_len());
    if (r <= 0) {
      *result = r;  // errno and OpenSSL's error state are the real call's
      return true;
    }
    w.wrote(static_cast<size_t>(r));
  }
  int saved = errno;
  for (size_t i = 0; i < w.edits(); ++i) c->h2->note_span(c->h2w->streams[w.tag(i)], c->h2w->spans[w.tag(i)]);
  // A retry offering more than the first call (OpenSSL allows a longer one) is told of the first
  // call's bytes only, a partial write.
  *result = static_cast<long>(std::min(w.program_len(), num));
  errno = saved;
  return true;
}

// Lays out W for a write of the program's bytes (buf, num): false when no field goes into them.
bool lay_out(TlsConn* c, const void* buf, size_t num) {
  txray::SaveErrno keep;
  if (!c->h2w) c->h2w = new (std::nothrow) TlsH2Write;
  TlsH2Write* h = c->h2w;
  if (!h) return false;
  const char* prog = static_cast<const char*>(buf);
  iovec v{const_cast<char*>(prog), num};
  txray::IoBytes bytes{&v, 1, num};
  txray::H2Client::Insert plan[TlsH2Write::kMax];
  size_t planned = c->h2->plan_insert(bytes, h->scratch, plan, TlsH2Write::kMax);
  if (!planned) return false;
  txray::Transaction* tx = txray::http_out::h2_call_tx();
  txray::OutboundContext ctx;
  if (!tx || !txray::outbound_context(tx, &ctx)) return false;
  // No more TLS records than the program's bytes need (16 KiB of plaintext each).
  constexpr size_t kRecord = 16384;
  h->w.begin(prog, num, (num + kRecord - 1) / kRecord * kRecord - num);
  char field[txray::H2Injector::kMaxField];
  for (size_t i = 0; i < planned; ++i) {
    const txray::H2Client::Insert& p = plan[i];
    h->streams[i] = p.stream;
    size_t flen;
    if (p.own & txray::kOwnTraceParent) {
      // A shim's traceparent: the rest of the context of the request its span was named for.
      h->spans[i] = p.program_span;
      std::string ts, bg;
      txray::OutboundContext named = ctx;
      if (!txray::span_owner::span_context(p.program_span, &ts, &bg)) continue;
      named.tracestate = ts;
      named.baggage = bg;
      flen = txray::hpack_context(named, h->spans[i], p.own, field, sizeof field);
      if (!flen) continue;
    } else {
      h->spans[i] = txray::rec::new_id();
      flen = txray::hpack_context(ctx, h->spans[i], p.own, field, sizeof field);
    }
    if (!flen || !h->w.add(p.frame_at, p.at, p.frame_len, field, flen, uint32_t(i))) break;
  }
  return h->w.finish();
}

// A client's write on an HTTP/2 connection over TLS: when it holds HEADERS frames of new requests, it is
// made here with traceparent fields inserted (see the top of this file). False: the plain call.
bool h2_tls_write(TlsConn* c, SSL* ssl, const void* buf, size_t num, const RealWrite& real, long* result) {
  if (!c || c->server || !c->h2_active || !c->h2) return false;
  if (c->h2w && c->h2w->w.pending()) return h2_tls_continue(c, ssl, num, real, result);
  if (num == 0 || num > INT_MAX / 2 || c->h2->dead() || !txray::http_out::propagate()) return false;
  if (!lay_out(c, buf, num)) return false;
  return h2_tls_continue(c, ssl, num, real, result);
}

void sent(SSL* ssl, const void* buf, size_t n) {
  txray::SaveErrno keep;
  TlsConn* c = conn_of(ssl, true);
  if (!c) return;
  classify(c, ssl, buf, n, false);
  if (c->wire_fd >= 0) {
    txray::http_out::tls_plaintext(c->wire_fd, true, static_cast<const char*>(buf), n);
    return;
  }
  if (c->h2_active) {
    if (c->server) c->h2_server->on_write(static_cast<const char*>(buf), n);
    else c->h2->on_sent(static_cast<const char*>(buf), n, c->h2_sink);
  } else if (!c->server && !c->tracker.opaque()) {
    c->tracker.on_sent(static_cast<const char*>(buf), n, c->sink);
  }
}

void received(SSL* ssl, const void* buf, size_t n) {
  txray::SaveErrno keep;
  auto is_server = TXRAY_REAL(SSL_is_server, kSsl);
  // A server's state is created by its first read (the client speaks first); a client's by its write.
  TlsConn* c = conn_of(ssl, is_server && is_server(ssl) == 1);
  if (!c) return;
  classify(c, ssl, buf, n, true);
  if (c->wire_fd >= 0) {
    txray::http_out::tls_plaintext(c->wire_fd, false, static_cast<const char*>(buf), n);
    return;
  }
  if (c->h2_active) {
    if (c->server) c->h2_server->on_read(static_cast<const char*>(buf), n);
    else c->h2->on_received(static_cast<const char*>(buf), n, c->h2_sink);
  } else if (!c->server && !c->tracker.opaque()) {
    c->tracker.on_received(static_cast<const char*>(buf), n, c->sink);
    // `Upgrade: h2c` is for cleartext only (TLS uses ALPN): such a call ends at its 101 here.
    if (txray::HttpCall u; c->tracker.take_upgraded(&u)) {
      u.status = 101;
      c->sink.on_response(u, {});
    }
  }
}

}  // namespace

extern "C" int SSL_write(SSL* ssl, const void* buf, int num) {
  auto real = TXRAY_REAL(SSL_write, kSsl);
  if (!real) return -1;
  txray::HookGuard guard(txray::HookFamily::tls);
  if (num > 0) {
    // Not watched (inside libcurl, a nested call): only a pending W of ours is continued (OpenSSL wants
    // it, not the program's bytes, on the retry).
    TlsConn* c = watching(guard) ? before_write(ssl, buf, static_cast<size_t>(num)) : pending_conn(ssl);
    RealWrite rw;
    rw.write = real;
    if (long res; h2_tls_write(c, ssl, buf, static_cast<size_t>(num), rw, &res)) {
      if (res > 0) sent(ssl, buf, static_cast<size_t>(res));
      return static_cast<int>(res);
    }
  }
  int r = real(ssl, buf, num);
  if (r > 0 && watching(guard)) sent(ssl, buf, static_cast<size_t>(r));
  return r;
}

extern "C" int SSL_write_ex(SSL* ssl, const void* buf, size_t num, size_t* written) {
  auto real = TXRAY_REAL(SSL_write_ex, kSsl);
  if (!real) return 0;
  txray::HookGuard guard(txray::HookFamily::tls);
  if (num > 0) {
    TlsConn* c = watching(guard) ? before_write(ssl, buf, num) : pending_conn(ssl);
    RealWrite rw;
    rw.write_ex = real;
    if (long res; h2_tls_write(c, ssl, buf, num, rw, &res)) {
      if (res <= 0) return 0;  // SSL_write_ex's failure (*written is not set, as OpenSSL leaves it)
      if (written) *written = static_cast<size_t>(res);
      sent(ssl, buf, static_cast<size_t>(res));
      return 1;
    }
  }
  int r = real(ssl, buf, num, written);
  if (r == 1 && written && *written > 0 && watching(guard)) sent(ssl, buf, *written);
  return r;
}

extern "C" int SSL_read(SSL* ssl, void* buf, int num) {
  auto real = TXRAY_REAL(SSL_read, kSsl);
  if (!real) return -1;
  txray::HookGuard guard(txray::HookFamily::tls);
  int r = real(ssl, buf, num);
  if (r > 0 && watching(guard)) received(ssl, buf, static_cast<size_t>(r));
  return r;
}

extern "C" int SSL_read_ex(SSL* ssl, void* buf, size_t num, size_t* readbytes) {
  auto real = TXRAY_REAL(SSL_read_ex, kSsl);
  if (!real) return 0;
  txray::HookGuard guard(txray::HookFamily::tls);
  int r = real(ssl, buf, num, readbytes);
  if (r == 1 && readbytes && *readbytes > 0 && watching(guard)) received(ssl, buf, *readbytes);
  return r;
}

// The handshake and the shutdown make no rows: they are hooked only so that the tls family is held while
// libssl does socket I/O of its own. A wire connection's TLS records written or read with it not held are
// TLS the program does without libssl on that socket (a runtime's own OpenSSL, JSSE, memory BIOs), whose
// plaintext never comes here: the dispatch counts such a connection at once (http_out.cpp, tls_unseen).
extern "C" int SSL_do_handshake(SSL* ssl) {
  auto real = TXRAY_REAL(SSL_do_handshake, kSsl);
  if (!real) return -1;
  txray::HookGuard guard(txray::HookFamily::tls);
  return real(ssl);
}

extern "C" int SSL_connect(SSL* ssl) {
  auto real = TXRAY_REAL(SSL_connect, kSsl);
  if (!real) return -1;
  txray::HookGuard guard(txray::HookFamily::tls);
  return real(ssl);
}

extern "C" int SSL_shutdown(SSL* ssl) {
  auto real = TXRAY_REAL(SSL_shutdown, kSsl);
  if (!real) return -1;
  txray::HookGuard guard(txray::HookFamily::tls);
  return real(ssl);
}
