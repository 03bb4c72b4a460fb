// The agent's ZeroMQ peer (transport/zmtp.h) and its descriptor (transport/own_fd.h) against a real
// libzmq PULL socket and against programs that take the descriptor away.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cpu/clock.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/fd_table.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "transport/curve_client.h"
#include "transport/own_fd.h"
#include "transport/transport.h"
#include "transport/zmtp.h"
#include "txray/v1/txray.pb.h"

using namespace txray;
using namespace txray::transport;

namespace {

uint64_t in_ms(int ms) { return clock::mono_ns() + uint64_t(ms) * 1'000'000; }

std::vector<int> agent_fds() {
  std::vector<int> out;
  fds::for_each_used(0, (fds::kChunks << fds::kChunkBits) - 1, [&](int fd, FdSlot& s) {
    if (s.kind.load() == FdKind::agent) out.push_back(fd);
  });
  return out;
}

// Runs fn in a forked child (process-wide settings such as RLIMIT_NOFILE stay there); its exit status.
template <typename Fn>
int in_child(Fn fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

class Pull {
 public:
  // curve_secret: a z85 server secret key to be a CURVE server (no ZAP handler: any client key).
  explicit Pull(const char* curve_secret = nullptr)
      : endpoint("ipc:///tmp/txray-zmtp-test-" + std::to_string(getpid()) + ".sock") {
    ctx_ = zmq_ctx_new();
    sock_ = zmq_socket(ctx_, ZMQ_PULL);
    if (curve_secret) {
      int on = 1;
      zmq_setsockopt(sock_, ZMQ_CURVE_SERVER, &on, sizeof on);
      zmq_setsockopt(sock_, ZMQ_CURVE_SECRETKEY, curve_secret, 40);
    }
    zmq_bind(sock_, endpoint.c_str());
  }
  ~Pull() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
    unlink(endpoint.substr(6).c_str());
  }
  // One message, or "<none>" after timeout_ms.
  std::string receive(int timeout_ms = 5000) {
    zmq_pollitem_t item{sock_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, timeout_ms) <= 0) return "<none>";
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock_, 0) < 0) return "<error>";
    std::string s(static_cast<char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    zmq_msg_close(&msg);
    return s;
  }
  std::string endpoint;

 private:
  void* ctx_;
  void* sock_;
};

Endpoint parsed(const std::string& text) {
  Endpoint ep;
  std::string err;
  EXPECT_TRUE(parse_endpoint(text, &ep, &err)) << text << ": " << err;
  return ep;
}

}  // namespace

TEST(Endpoint, TcpIpcAndWhatIsRefused) {
  Endpoint ep = parsed("tcp://127.0.0.1:7878");
  EXPECT_FALSE(ep.ipc);
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, "7878");
  EXPECT_EQ(parsed("tcp://[::1]:9").host, "::1");
  EXPECT_EQ(parsed("tcp://collector.example:9").host, "collector.example");
  EXPECT_EQ(parsed("ipc:///tmp/c.sock").path, "/tmp/c.sock");
  EXPECT_EQ(parsed("ipc://@abstract").path, "@abstract");
  std::string err;
  for (const char* bad : {"", "tcp://", "tcp://host", "tcp://*:7878", "tcp://h:port", "udp://h:1", "ipc://",
                          "inproc://x"}) {
    EXPECT_FALSE(parse_endpoint(bad, &ep, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
}

TEST(Zmtp, LibzmqPullReceivesSmallAndLargeMessages) {
  Pull pull;
  ZmtpPush push;
  ASSERT_TRUE(push.open(parsed(pull.endpoint), in_ms(5000))) << push.error();
  EXPECT_EQ(push.peer_socket_type(), "PULL");
  std::string small = "hello", large(3'000'000, 'x');
  large[0] = 'L';
  ASSERT_TRUE(push.send(small.data(), small.size(), in_ms(5000)));
  EXPECT_EQ(pull.receive(), small);
  std::thread t([&] { EXPECT_TRUE(push.send(large.data(), large.size(), in_ms(10000))); });
  EXPECT_EQ(pull.receive(), large);  // longer than the socket buffer: written while the peer reads
  t.join();
  ASSERT_TRUE(push.send("", 0, in_ms(5000)));
  EXPECT_EQ(pull.receive(), "");
  EXPECT_TRUE(push.check());
}

// CURVE (curve_client.h) against libzmq's own CURVE server: the handshake, then messages of every size
// sealed and opened; a wrong server key fails the handshake instead of sending in clear text.
TEST(Zmtp, CurveToALibzmqCurveServer) {
  char spub[41], ssec[41], cpub[41], csec[41];
  ASSERT_EQ(zmq_curve_keypair(spub, ssec), 0);
  ASSERT_EQ(zmq_curve_keypair(cpub, csec), 0);
  uint8_t S[32], C[32], c[32], derived[32];
  ASSERT_TRUE(z85_decode_key(spub, S));
  ASSERT_TRUE(z85_decode_key(cpub, C));
  ASSERT_TRUE(z85_decode_key(csec, c));
  derive_public_key(c, derived);
  EXPECT_EQ(memcmp(derived, C, 32), 0);
  EXPECT_FALSE(z85_decode_key("too short", S + 0));
  Pull pull(ssec);
  ZmtpPush push;
  push.use_curve(S, C, c);
  ASSERT_TRUE(push.open(parsed(pull.endpoint), in_ms(5000))) << push.error();
  EXPECT_EQ(push.peer_socket_type(), "PULL");
  std::string small = "hello", large(300'000, 'y');
  for (int i = 0; i < 3; ++i) {  // nonces go on across messages
    ASSERT_TRUE(push.send(small.data(), small.size(), in_ms(5000)));
    EXPECT_EQ(pull.receive(), small);
  }
  std::thread t([&] { EXPECT_TRUE(push.send(large.data(), large.size(), in_ms(10000))); });
  EXPECT_EQ(pull.receive(), large);
  t.join();
  ASSERT_TRUE(push.send("", 0, in_ms(5000)));
  EXPECT_EQ(pull.receive(), "");

  ZmtpPush wrong;
  uint8_t other[32];
  memcpy(other, S, 32);
  other[0] ^= 1;
  wrong.use_curve(other, C, c);
  EXPECT_FALSE(wrong.open(parsed(pull.endpoint), in_ms(3000)));
  EXPECT_FALSE(wrong.is_open());
}

TEST(Zmtp, RefusedAndNonZmqPeersFailWithoutWaiting) {
  ZmtpPush push;
  EXPECT_FALSE(push.open(parsed("ipc:///tmp/txray-nobody-" + std::to_string(getpid())), in_ms(60000)));
  EXPECT_FALSE(push.is_open());
  // A peer that answers with something else (an HTTP server, say) is refused, not written to.
  std::string path = "/tmp/txray-zmtp-http-" + std::to_string(getpid());
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::snprintf(un.sun_path, sizeof un.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&un), sizeof un), 0);
  listen(l, 1);
  std::thread server([&] {
    int c = accept(l, nullptr, nullptr);
    const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n................................................";
    ssize_t w = write(c, reply, sizeof reply - 1);
    (void)w;
    char buf[256];
    while (read(c, buf, sizeof buf) > 0) {
    }
    close(c);
  });
  EXPECT_FALSE(push.open(parsed("ipc://" + path), in_ms(5000)));
  EXPECT_STREQ(push.error(), "the collector endpoint does not speak ZMTP");
  EXPECT_FALSE(push.is_open());
  server.join();
  close(l);
  unlink(path.c_str());
}

TEST(Zmtp, PeerThatClosedIsNoticedBeforeTheNextSend) {
  auto pull = std::make_unique<Pull>();
  ZmtpPush push;
  ASSERT_TRUE(push.open(parsed(pull->endpoint), in_ms(5000)));
  pull.reset();
  bool noticed = false;
  for (int i = 0; i < 200 && !noticed; ++i) {
    noticed = !push.check();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(noticed);
  EXPECT_FALSE(push.is_open());
}

TEST(OwnFd, ConnectionSitsAtTheTopOfTheTableAndIsMarked) {
  Pull pull;
  EXPECT_EQ(in_child([&] {
              take_private_fd_table(true, false);  // the shared table (where unshare is refused)
              rlimit rl{16, 16};
              if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
              ZmtpPush push;
              if (!push.open(parsed(pull.endpoint), in_ms(5000))) return 2;
              if (push.fd() != 15) return 3;
              if (fds::kind_of(15) != FdKind::agent) return 4;
              if (!(fcntl(15, F_GETFD) & FD_CLOEXEC)) return 5;
              push.close();
              if (fds::kind_of(15) != FdKind::none || fcntl(15, F_GETFD) != -1) return 6;
              return 0;
            }),
            0);
}

TEST(OwnFd, NeverTakesTheStandardStreamsEvenWhenClosed) {
  EXPECT_EQ(in_child([] {
              take_private_fd_table(true, false);  // the shared table
              rlimit rl{3, 3};  // 0-2 only, all closed: no room for the agent
              if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
              close(0);
              close(1);
              close(2);
              if (open_own_socket(AF_UNIX) != -1 || errno != EMFILE) return 2;
              if (fcntl(0, F_GETFD) != -1) return 3;  // closed again: the program's 0 is free
              if (fds::kind_of(0) != FdKind::none) return 4;
              return 0;
            }),
            0);
  EXPECT_EQ(in_child([] {
              take_private_fd_table(true, false);
              close(0);
              close(1);
              close(2);
              int fd = open_own_socket(AF_UNIX);
              return fd > 2 && fcntl(0, F_GETFD) == -1 && fds::kind_of(fd) == FdKind::agent ? 0 : 1;
            }),
            0);
}

// The default: the agent thread's descriptor table is its own. Its connection is invisible to the
// program, and the copies of the program's descriptors that came with unshare() are let go at once (a
// pipe the program closes reaches end of file; nothing of the program's stays open).
TEST(OwnFd, PrivateTableHoldsNothingOfTheProgramsAndShowsItNothing) {
  Pull pull;
  EXPECT_EQ(in_child([&] {
              int p[2];
              if (pipe(p) != 0) return 1;
              int agent_fd = -1;
              bool is_private = false;
              std::thread t([&] {
                is_private = take_private_fd_table(false, false);
                ZmtpPush push;
                if (push.open(parsed(pull.endpoint), in_ms(5000))) agent_fd = push.fd();
                push.abandon();  // stays open in the thread's table
              });
              t.join();
              if (!is_private) return 0;  // unshare refused here (seccomp): nothing to check
              if (agent_fd < 0) return 2;
              // The program's table: its pipe as before, nothing of the agent's, no marks.
              if (fcntl(p[0], F_GETFD) < 0 || fcntl(p[1], F_GETFD) < 0) return 3;
              if (!agent_fds().empty()) return 4;
              int next = open("/dev/null", O_RDONLY);
              if (next != p[1] + 1) return 5;
              // The agent's copy of the write end is gone: closing ours gives the reader end of file.
              close(p[1]);
              char c;
              if (read(p[0], &c, 1) != 0) return 6;
              return 0;
            }),
            0);
}
