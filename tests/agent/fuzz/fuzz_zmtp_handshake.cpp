// libFuzzer target: the agent's ZMTP handshake (agent/transport/zmtp.cpp, curve_client.cpp) against a
// "collector" that answers with the fuzzer's bytes. It runs in the host, on the agent's thread, on bytes
// from whatever listens at TXRAY_COLLECTOR: txray collect, another program, or a hostile peer. The
// real code runs end to end over a real Unix socket (an abstract name of this process): connect, our
// greeting, the peer's greeting, READY (NULL mechanism) or HELLO/WELCOME/INITIATE/READY (CURVE). Promises:
//  - never a crash, a read past a buffer, or a wait far past the deadline;
//  - the handshake succeeds only with a ZMTP 3.x greeting of the right mechanism and a PULL peer, and
//    never with CURVE unless the peer proves it holds the server key (the fuzzer cannot);
//  - a failure leaves no descriptor open and says why.
#include <fuzzer/FuzzedDataProvider.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <strings.h>
#include <thread>

#include "cpu/clock.h"
#include "transport/zmtp.h"

using namespace txray;
using namespace txray::transport;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n", what, int(a.size()), a.data());
  abort();
}

int g_listener = -1;
std::string g_name;

int open_fds() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd)
    if (fcntl(fd, F_GETFD) >= 0) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_name = "@txray-fuzz-zmtp-" + std::to_string(getpid());
  g_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  memcpy(un.sun_path + 1, g_name.data() + 1, g_name.size() - 1);
  socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + g_name.size());
  if (bind(g_listener, reinterpret_cast<sockaddr*>(&un), len) != 0 || listen(g_listener, 16) != 0) {
    perror("fuzz_zmtp_handshake: listen");
    abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  bool curve = in.ConsumeBool();
  std::string answer = in.ConsumeRemainingBytesAsString();

  Endpoint ep;
  std::string err;
  if (!parse_endpoint("ipc://" + g_name, &ep, &err)) fail("endpoint", err);
  int before = open_fds();
  bool ok;
  std::string type;
  {
    ZmtpPush push;
    if (curve) {
      // Any key pair and server key: the peer cannot open HELLO without the server's secret key.
      uint8_t server[32], pub[32], sec[32];
      for (int i = 0; i < 32; ++i) {
        sec[i] = uint8_t(i * 7 + 1);
        server[i] = uint8_t(i * 13 + 5);
      }
      derive_public_key(sec, pub);
      push.use_curve(server, pub, sec);
    }
    // The collector: takes the connection, says its bytes, closes its sending side, and reads until the
    // agent hangs up.
    std::thread peer([&] {
      int c = accept4(g_listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      size_t off = 0;
      while (off < answer.size()) {
        ssize_t w = send(c, answer.data() + off, answer.size() - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += size_t(w);
      }
      shutdown(c, SHUT_WR);
      char sink[4096];
      while (recv(c, sink, sizeof sink, 0) > 0) {
      }
      close(c);
    });
    uint64_t t0 = clock::mono_ns();
    ok = push.open(ep, t0 + 2'000'000'000ull);
    uint64_t took = clock::mono_ns() - t0;
    // Past its 2 s deadline by far, not by what a loaded machine adds to a sanitized build's 2 s (it
    // once took over 2.5 s in a parallel make test): the promise is "bounded", not "fast".
    if (took > 20'000'000'000ull) fail("handshake waited past its deadline");
    if (!ok && (push.is_open() || !*push.error())) fail("failure without a reason, or with the connection open");
    type = push.peer_socket_type();
    if (getenv("TXRAY_FUZZ_PRINT")) fprintf(stderr, "handshake: %s\n", ok ? "ok" : push.error());
    if (ok) {
      if (curve) fail("CURVE handshake succeeded without the server's key");
      if (strcasecmp(type.c_str(), "PULL") != 0) fail("handshake succeeded with a peer that is not PULL", type);
      if (answer.size() < 64 || (uint8_t)answer[0] != 0xFF || (uint8_t)answer[9] != 0x7F || (uint8_t)answer[10] < 3 ||
          memcmp(answer.data() + 12, "NULL", 5) != 0)
        fail("handshake succeeded without a ZMTP 3 NULL greeting", answer);
      const char msg[] = "after the handshake";
      push.send(msg, sizeof msg, clock::mono_ns() + 1'000'000'000ull);
    }
    push.close();
    peer.join();
  }
  if (open_fds() != before) fail("descriptor left open");
  return 0;
}
