// collector/ingest/curve_auth: which endpoints count as local, key files, and the ZAP handler's answers
// (a real CURVE handshake over inproc with a listed and an unlisted client key).
#include <gtest/gtest.h>
#include <zmq.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "curve_auth.h"

namespace txray::ingest {
namespace {

TEST(CurveAuth, LocalEndpoints) {
  for (const char* ep : {"tcp://127.0.0.1:7878", "tcp://127.1.2.3:1", "tcp://localhost:7878", "tcp://[::1]:7878",
                         "tcp://lo:7878", "ipc:///tmp/x.sock", "ipc://@abstract", "inproc://x", "bogus://nowhere"})
    EXPECT_TRUE(is_local_endpoint(ep)) << ep;
  for (const char* ep : {"tcp://0.0.0.0:7878", "tcp://*:7878", "tcp://10.0.0.5:7878", "tcp://[::]:7878",
                         "tcp://eth0:7878", "tcp://collector.example:7878", "tcp://128.0.0.1:1", "ws://127.0.0.1:1",
                         "tcp://nonsense", "pgm://eth0;239.192.1.1:5555"})
    EXPECT_FALSE(is_local_endpoint(ep)) << ep;
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CurveAuth, KeyFiles) {
  char pub[41], sec[41], pub2[41], sec2[41];
  ASSERT_EQ(zmq_curve_keypair(pub, sec), 0);
  ASSERT_EQ(zmq_curve_keypair(pub2, sec2), 0);
  auto list = write_file("allowed", std::string("# agents\n\n") + pub + "  web-1\n   " + pub2 + "\r\n");
  EXPECT_EQ(read_key_file(list), (std::vector<std::string>{pub, pub2}));
  EXPECT_THROW(read_single_key(list, "secret key"), std::runtime_error);
  EXPECT_EQ(read_single_key(write_file("one", std::string("# c\n") + sec + "\n"), "secret key"), sec);
  EXPECT_THROW(read_key_file(write_file("bad", "short\n")), std::runtime_error);
  EXPECT_THROW(read_key_file("/nonexistent/keys"), std::runtime_error);
}

// Connects a CURVE client with the given key pair; true when a message got through.
bool client_gets_through(void* ctx, const char* endpoint, const char* server_pub, const char* pub, const char* sec,
                         void* server) {
  void* c = zmq_socket(ctx, ZMQ_PUSH);
  int linger = 0;
  zmq_setsockopt(c, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(c, ZMQ_CURVE_SERVERKEY, server_pub, 41);
  zmq_setsockopt(c, ZMQ_CURVE_PUBLICKEY, pub, 41);
  zmq_setsockopt(c, ZMQ_CURVE_SECRETKEY, sec, 41);
  zmq_connect(c, endpoint);
  zmq_send(c, "hi", 2, ZMQ_DONTWAIT);
  char buf[8];
  int timeout = 500;
  zmq_setsockopt(server, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
  bool got = zmq_recv(server, buf, sizeof buf, 0) == 2;
  zmq_close(c);
  return got;
}

TEST(CurveAuth, ZapAdmitsListedKeysOnly) {
  if (!zmq_has("curve")) GTEST_SKIP() << "libzmq without CURVE";
  void* ctx = zmq_ctx_new();
  char spub[41], ssec[41], cpub[41], csec[41], opub[41], osec[41];
  zmq_curve_keypair(spub, ssec);
  zmq_curve_keypair(cpub, csec);
  zmq_curve_keypair(opub, osec);
  {
    ZapAuthenticator zap(ctx, {cpub});
    void* s = zmq_socket(ctx, ZMQ_PULL);
    int one = 1, linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, ssec, 41);
    zmq_setsockopt(s, ZMQ_ZAP_DOMAIN, "txray", 5);
    ASSERT_EQ(zmq_bind(s, "tcp://127.0.0.1:*"), 0);
    char ep[256];
    size_t len = sizeof ep;
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len);
    EXPECT_TRUE(client_gets_through(ctx, ep, spub, cpub, csec, s));
    EXPECT_FALSE(client_gets_through(ctx, ep, spub, opub, osec, s));
    EXPECT_GE(zap.accepted(), 1u);
    EXPECT_GE(zap.denied(), 1u);
    zmq_close(s);
    zap.stop();
  }
  zmq_ctx_term(ctx);
}

}  // namespace
}  // namespace txray::ingest
