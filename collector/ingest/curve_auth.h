// Who may write to the store: the collector's side of ZeroMQ CURVE (docs/security.md).
//   - keys: z85 text files as `txray keygen` writes them (one key per line, '#' comments);
//   - a ZAP handler: libzmq asks it about every CURVE handshake; it accepts the listed client keys only;
//   - a socket monitor: counts every peer whose handshake failed (no CURVE, wrong server key, unlisted
//     key, not ZeroMQ at all), which the status line reports as refused peers.
// Everything here runs in the collector only; the agent sets its keys in agent/transport/transport.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace txray::ingest {

inline constexpr size_t kZ85KeyChars = 40;  // a 32-byte CURVE key in z85

// True for a 40-character z85 text that decodes to 32 bytes.
bool is_z85_key(const std::string& s);

// The keys in a key file: the first word of every line that is not empty or a '#' comment. Throws
// std::runtime_error naming the file and line when a word is not a z85 key or the file cannot be read.
std::vector<std::string> read_key_file(const std::string& path);

// The only key of a key file (a secret key, a server's public key); throws unless there is exactly one.
std::string read_single_key(const std::string& path, const char* what);

// True when binding `endpoint` exposes the collector to this machine only: ipc:// and inproc://, or
// tcp:// on 127.0.0.0/8, ::1, localhost or the interface "lo". Every other address (0.0.0.0, *, a
// non-loopback IP, a host or interface name) and libzmq's other network transports (ws://, pgm://, …) are
// reachable from elsewhere. Not an endpoint at all: true (binding it fails with its own message).
bool is_local_endpoint(const std::string& endpoint);

// The ZAP handler (RFC 27): a thread with a REP socket on inproc://zeromq.zap.01 in the collector's
// context. It must be started before the PULL socket binds and stopped before the context is closed.
class ZapAuthenticator {
 public:
  ZapAuthenticator(void* zmq_context, std::unordered_set<std::string> allowed_z85);
  ~ZapAuthenticator();
  ZapAuthenticator(const ZapAuthenticator&) = delete;
  ZapAuthenticator& operator=(const ZapAuthenticator&) = delete;

  void stop();
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t denied() const { return denied_.load(); }  // CURVE clients whose key is not listed

 private:
  void run(void* sock);

  std::unordered_set<std::string> allowed_;  // z85 public keys
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accepted_{0}, denied_{0};
  std::thread thread_;
};

}  // namespace txray::ingest
