// The agent's side of the wire to `txray collect`: a ZeroMQ PUSH peer written out in full — ZMTP 3.0
// (https://rfc.zeromq.org/spec/23/) with the NULL security mechanism over one TCP or Unix stream socket —
// so that the collector's libzmq PULL socket sees an ordinary PUSH peer.
//
// Why not libzmq in the host: it holds 6-7 descriptors (eventfds, epoll instances, the connection) at
// the lowest free numbers, on I/O threads of its own that abort() the whole process when the program
// closes or dup2()s over one of them (a daemon that closed 0-2 and kept logging there; a
// server that dup2()ed /dev/null over every descriptor it did not open). This peer holds one
// descriptor (own_fd.h: placed high, guarded, checked before each use), runs on the agent's own thread
// only, waits only until the deadlines its caller gives, and reports every failure as a return value.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/curve_client.h"
#include "transport/own_fd.h"

namespace txray::transport {

// A collector endpoint as `txray collect --listen` takes it: tcp://HOST:PORT (HOST an IPv4 address, a
// [bracketed] IPv6 address or a name) or ipc://PATH (ipc://@NAME: the abstract namespace, as libzmq).
struct Endpoint {
  bool ipc = false;
  std::string host;  // tcp
  std::string port;  // tcp
  std::string path;  // ipc (a leading '@' means abstract)
};
// False (with the reason in *err) for anything else.
bool parse_endpoint(const std::string& text, Endpoint* out, std::string* err);

class ZmtpPush {
 public:
  ZmtpPush() = default;
  ~ZmtpPush() { close(); }
  ZmtpPush(const ZmtpPush&) = delete;
  ZmtpPush& operator=(const ZmtpPush&) = delete;

  // Authenticate and encrypt with CURVE (the collector's public key, this agent's key pair) from the next
  // open() on. Without it the NULL mechanism (clear text) is used.
  void use_curve(const uint8_t server_public[32], const uint8_t client_public[32], const uint8_t client_secret[32]);

  // Connects and completes the ZMTP handshake before `deadline_ns` (clock::mono_ns). False on failure,
  // with the reason in error().
  // handshake_deadline_ns: the handshake's own bound once connected (0: deadline_ns as well).
  bool open(const Endpoint& ep, uint64_t deadline_ns, uint64_t handshake_deadline_ns = 0);
  bool is_open() const { return fd_ >= 0; }

  // The connection is still usable: the descriptor is still the agent's (not closed or replaced behind
  // the hooks — then the number is left to the program) and the peer has not closed its end. Closes the
  // connection and returns false otherwise.
  bool check();

  // Sends one single-frame message, waiting for room in the socket until `deadline_ns` at most. On any
  // failure (peer gone, deadline passed in the middle of the frame) the connection is closed, since the
  // stream can no longer be trusted, and false is returned.
  bool send(const void* data, size_t n, uint64_t deadline_ns);

  void close();

  // Forgets the connection without closing it: in a forked child, whose copy of the parent's socket is
  // closed separately (after_fork_child).
  void abandon() { fd_ = -1; }

  int fd() const { return fd_; }
  const char* error() const { return error_; }
  // The last failure was about the descriptor itself: none could be had (RLIMIT_NOFILE reached, or
  // only 0-2 free), or the program closed or replaced it behind the hooks.
  bool descriptor_trouble() const { return descriptor_trouble_; }
  // The peer's socket type from its READY command ("PULL" for txray collect).
  const std::string& peer_socket_type() const { return peer_type_; }

 private:
  bool connect_to(const sockaddr* sa, socklen_t len, uint64_t deadline_ns);
  bool handshake(uint64_t deadline_ns);
  bool handshake_curve(uint64_t deadline_ns);
  bool write_command(const void* body, size_t n, uint64_t deadline_ns);
  bool greet(const uint8_t* mine, size_t n, const char* mechanism, const char* mismatch, uint64_t deadline_ns);
  bool read_command(uint8_t* body, size_t cap, size_t* n, uint64_t deadline_ns);
  bool write_all(const void* a, size_t an, const void* b, size_t bn, uint64_t deadline_ns);
  bool read_exact(void* buf, size_t n, uint64_t deadline_ns);
  bool wait(short events, uint64_t deadline_ns);
  bool fail(const char* why);

  int fd_ = -1;
  FileId id_;
  const char* error_ = "";
  bool descriptor_trouble_ = false;
  std::string peer_type_;
  bool curve_on_ = false;
  uint8_t curve_keys_[96] = {};  // S, C, c
  CurveClient curve_;
  std::string sealed_;
};

}  // namespace txray::transport
