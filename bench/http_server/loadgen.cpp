// txray-bench-loadgen: a keep-alive HTTP/1.1 load generator.
//   txray-bench-loadgen --port P [--connections C] [--seconds S] [--path /x] [--rate R] [--sink ENDPOINT]
//                       [--timeline FILE]
// C threads each hold one connection and send GET requests back to back for S seconds, reading each
// response (Content-Length framing) before the next. Prints "requests N seconds S rps R errors E".
// --rate R paces them to R requests per second in all (each connection sends its n-th request no earlier
// than n x C / R seconds after the start): a bare and an instrumented server then serve the same load,
// so that their CPU per request is compared in the same state (not one saturated and one waiting).
// --sink binds a ZeroMQ PULL socket there and discards what arrives (a stand-in collector that costs
// next to nothing, so the benchmark measures the agent and not SQLite); it prints "sink messages M".
// With --sink and no --port it is only that sink, until SIGTERM or SIGINT.
// --timeline writes "UNIX_NS REQUESTS" every 100 ms (requests answered so far), so that a test can take
// the rate of any stretch of the run (tests/reliability/test_collector_outage.py).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  int port = 0;
  int connections = 4;
  double seconds = 3;
  std::string path = "/";
  std::string sink;
  std::string timeline;
  double rate = 0;  // requests per second in all; 0: back to back
};

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Reads one response; false on EOF/error or malformed framing.
bool read_response(int fd, std::string& buf) {
  for (;;) {
    size_t head_end = buf.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      size_t cl = buf.find("Content-Length:");
      if (cl == std::string::npos || cl > head_end) cl = buf.find("content-length:");
      if (cl == std::string::npos || cl > head_end) return false;
      size_t len = std::strtoul(buf.c_str() + cl + 15, nullptr, 10);
      size_t total = head_end + 4 + len;
      if (buf.size() >= total) {
        buf.erase(0, total);
        return true;
      }
    }
    char tmp[16384];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, size_t(n));
  }
}

void usage() {
  std::fprintf(stderr, "usage: txray-bench-loadgen --port P [--connections C] [--seconds S] [--path /x] [--rate R]"
                       " [--sink EP] [--timeline FILE]\n");
  std::exit(2);
}

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

// Only the sink: receive and discard until a stop signal.
int sink_only(const Options& o) {
  std::signal(SIGTERM, on_stop);
  std::signal(SIGINT, on_stop);
  void* ctx = zmq_ctx_new();
  void* pull = zmq_socket(ctx, ZMQ_PULL);
  if (zmq_bind(pull, o.sink.c_str()) != 0) {
    std::fprintf(stderr, "loadgen: cannot bind %s: %s\n", o.sink.c_str(), zmq_strerror(zmq_errno()));
    return 1;
  }
  int timeout = 100;
  zmq_setsockopt(pull, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
  long messages = 0;
  zmq_msg_t m;
  zmq_msg_init(&m);
  while (!g_stop)
    if (zmq_msg_recv(&m, pull, 0) >= 0) ++messages;
  zmq_msg_close(&m);
  zmq_close(pull);
  zmq_ctx_term(ctx);
  std::printf("sink messages %ld\n", messages);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage();
    std::string v = argv[++i];
    if (a == "--port") o.port = std::atoi(v.c_str());
    else if (a == "--connections") o.connections = std::atoi(v.c_str());
    else if (a == "--seconds") o.seconds = std::atof(v.c_str());
    else if (a == "--path") o.path = v;
    else if (a == "--sink") o.sink = v;
    else if (a == "--timeline") o.timeline = v;
    else if (a == "--rate") o.rate = std::atof(v.c_str());
    else usage();
  }
  if (o.port <= 0 && !o.sink.empty()) return sink_only(o);
  if (o.port <= 0 || o.connections <= 0 || o.seconds <= 0) usage();

  std::atomic<bool> stop{false};
  std::atomic<long> sink_messages{0};
  void* ctx = nullptr;
  std::thread sink;
  if (!o.sink.empty()) {
    ctx = zmq_ctx_new();
    void* pull = zmq_socket(ctx, ZMQ_PULL);
    if (zmq_bind(pull, o.sink.c_str()) != 0) {
      std::fprintf(stderr, "loadgen: cannot bind %s: %s\n", o.sink.c_str(), zmq_strerror(zmq_errno()));
      return 1;
    }
    sink = std::thread([&, pull] {
      int timeout = 100;
      zmq_setsockopt(pull, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
      zmq_msg_t m;
      zmq_msg_init(&m);
      while (!stop.load()) {
        if (zmq_msg_recv(&m, pull, 0) >= 0) sink_messages.fetch_add(1);
      }
      zmq_msg_close(&m);
      zmq_close(pull);
    });
  }

  const std::string req = "GET " + o.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: txray-loadgen\r\n\r\n";
  std::atomic<long> requests{0}, errors{0}, answered{0};
  auto t0 = std::chrono::steady_clock::now();
  auto deadline = t0 + std::chrono::duration<double>(o.seconds);
  std::thread timeline;
  std::atomic<bool> workers_done{false};
  if (!o.timeline.empty()) {
    FILE* f = std::fopen(o.timeline.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "loadgen: cannot write %s\n", o.timeline.c_str());
      return 1;
    }
    timeline = std::thread([&, f] {
      for (bool last = false; !last;) {
        last = workers_done.load();
        auto now = std::chrono::system_clock::now().time_since_epoch();
        std::fprintf(f, "%lld %ld\n", static_cast<long long>(std::chrono::nanoseconds(now).count()), answered.load());
        std::fflush(f);
        if (!last) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      std::fclose(f);
    });
  }
  std::vector<std::thread> workers;
  for (int c = 0; c < o.connections; ++c)
    workers.emplace_back([&] {
      std::string buf;
      int fd = connect_to(o.port);
      long done = 0;
      const auto interval = std::chrono::duration<double>(o.rate > 0 ? o.connections / o.rate : 0);
      while (std::chrono::steady_clock::now() < deadline) {
        if (o.rate > 0) {
          auto due = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval * double(done));
          if (due > deadline) break;
          std::this_thread::sleep_until(due);
        }
        if (fd < 0) {
          errors.fetch_add(1);
          fd = connect_to(o.port);
          if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        if (write(fd, req.data(), req.size()) != ssize_t(req.size()) || !read_response(fd, buf)) {
          errors.fetch_add(1);
          close(fd);
          fd = -1;
          buf.clear();
          continue;
        }
        ++done;
        answered.fetch_add(1, std::memory_order_relaxed);
      }
      if (fd >= 0) close(fd);
      requests.fetch_add(done);
    });
  for (auto& w : workers) w.join();
  workers_done.store(true);
  if (timeline.joinable()) timeline.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sink.joinable()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // what the agent still sends
    stop.store(true);
    sink.join();
    zmq_ctx_term(ctx);
  }
  std::printf("requests %ld seconds %.3f rps %.0f errors %ld\n", requests.load(), secs, requests.load() / secs,
              errors.load());
  if (!o.sink.empty()) std::printf("sink messages %ld\n", sink_messages.load());
  return 0;
}
