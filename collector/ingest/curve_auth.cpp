#include "curve_auth.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <zmq.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace txray::ingest {

bool is_z85_key(const std::string& s) {
  if (s.size() != kZ85KeyChars) return false;
  uint8_t out[32];
  return zmq_z85_decode(out, s.c_str()) != nullptr;
}

std::vector<std::string> read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read key file " + path + ": " + std::strerror(errno));
  std::vector<std::string> keys;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    size_t e = line.find_first_of(" \t\r", b);
    std::string word = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    // No z85 key starts with '#' (its first group would pass 32 bits): such a line is a comment.
    if (!is_z85_key(word) && word[0] == '#') continue;
    if (!is_z85_key(word))
      throw std::runtime_error(path + ":" + std::to_string(no) + ": not a CURVE key (40 z85 characters)");
    keys.push_back(std::move(word));
  }
  return keys;
}

std::string read_single_key(const std::string& path, const char* what) {
  auto keys = read_key_file(path);
  if (keys.size() != 1)
    throw std::runtime_error(path + " holds " + std::to_string(keys.size()) + " keys; expected one " + what);
  return keys[0];
}

bool is_local_endpoint(const std::string& ep) {
  auto starts = [&](const char* p) { return ep.rfind(p, 0) == 0; };
  if (starts("ipc://") || starts("inproc://")) return true;
  // libzmq's other network transports are reachable from elsewhere; anything else is no endpoint at all
  // (the bind refuses it with its own message).
  for (const char* net : {"ws://", "wss://", "pgm://", "epgm://", "norm://", "tipc://", "vmci://", "udp://"})
    if (starts(net)) return false;
  if (!starts("tcp://")) return true;
  std::string rest = ep.substr(6);
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "lo" || host == "::1") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

ZapAuthenticator::ZapAuthenticator(void* ctx, std::unordered_set<std::string> allowed) : allowed_(std::move(allowed)) {
  void* sock = zmq_socket(ctx, ZMQ_REP);
  if (!sock) throw std::runtime_error(std::string("ZAP socket: ") + zmq_strerror(zmq_errno()));
  int linger = 0;
  zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_bind(sock, "inproc://zeromq.zap.01") != 0) {
    std::string err = zmq_strerror(zmq_errno());
    zmq_close(sock);
    throw std::runtime_error("ZAP handler: " + err);
  }
  thread_ = std::thread([this, sock] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    pthread_setname_np(pthread_self(), "txray-zap");
    run(sock);
    zmq_close(sock);
  });
}

ZapAuthenticator::~ZapAuthenticator() { stop(); }

void ZapAuthenticator::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

namespace {

// Receives one multipart message (at most 16 frames kept); false on timeout or error.
bool recv_frames(void* sock, std::vector<std::string>& frames) {
  frames.clear();
  int more = 1;
  while (more) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, 0) < 0) {
      zmq_msg_close(&m);
      return false;
    }
    if (frames.size() < 16) frames.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
    more = zmq_msg_more(&m);
    zmq_msg_close(&m);
  }
  return true;
}

void send_reply(void* sock, const std::string& request_id, const char* code, const char* text,
                const std::string& user_id) {
  const std::string parts[] = {"1.0", request_id, code, text, user_id, ""};
  for (size_t i = 0; i < 6; ++i)
    zmq_send(sock, parts[i].data(), parts[i].size(), i + 1 < 6 ? ZMQ_SNDMORE : 0);
}

}  // namespace

void ZapAuthenticator::run(void* sock) {
  std::vector<std::string> f;
  uint64_t logged = 0;
  while (!stop_.load()) {
    zmq_pollitem_t item{sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 100) <= 0) continue;
    if (!recv_frames(sock, f)) continue;
    // version, request id, domain, address, routing id, mechanism, credentials…
    if (f.size() < 6) {  // cannot happen with libzmq; answer so the REP socket stays in step
      send_reply(sock, f.size() > 1 ? f[1] : "", "500", "bad ZAP request", "");
      continue;
    }
    const std::string& request_id = f[1];
    const std::string& address = f[3];
    const std::string& mechanism = f[5];
    std::string key_z85;
    if (mechanism == "CURVE" && f.size() >= 7 && f[6].size() == 32) {
      char buf[kZ85KeyChars + 1];
      if (zmq_z85_encode(buf, reinterpret_cast<const uint8_t*>(f[6].data()), 32)) key_z85 = buf;
    }
    if (!key_z85.empty() && allowed_.count(key_z85)) {
      ++accepted_;
      send_reply(sock, request_id, "200", "OK", key_z85);
      continue;
    }
    ++denied_;
    // A peer that keeps retrying must not flood the log: the first few, then only the count.
    if (++logged <= 10)
      std::fprintf(stderr, "txray collect: refused a %s client from %s%s%s%s\n", mechanism.c_str(), address.c_str(),
                   key_z85.empty() ? "" : " with unlisted key ", key_z85.c_str(),
                   logged == 10 ? " (further refusals are only counted)" : "");
    send_reply(sock, request_id, "400", "key not allowed", "");
  }
}

}  // namespace txray::ingest
