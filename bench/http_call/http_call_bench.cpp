// txray-bench-http-call: the cost of one outbound HTTP/1.1 call on a keep-alive loopback connection.
//
//   txray-bench-http-call --serve PORT          a minimal single-threaded server (run it bare)
//   txray-bench-http-call --call PORT N BATCH   N calls ("GET /item/<i>", 2-byte answer), a transaction
//                                               (txray_begin/txray_end) around every BATCH calls so that,
//                                               under the agent, each call is an HTTP_CALL row with a
//                                               traceparent header inserted. Prints
//                                               "ns_per_call X cpu_ns_per_call Y": wall time and the
//                                               calling thread's CPU time per call, each the median
//                                               over chunks of 1000 calls (a chunk hit by another
//                                               process on this small machine does not count). The
//                                               CPU figure is what the calls cost this thread, which
//                                               other load on the machine hardly changes.
// Plain read()/write() on blocking sockets, as a hand-written client does (samples/common's net.h only
// sets the sockets up, outside the timed loop).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <txray/txray.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "net.h"

namespace {

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int serve(int port) {
  int ls = txray::samples::listen_tcp("127.0.0.1", uint16_t(port), 16);
  static const char kResp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  int one = 1;
  for (;;) {
    int fd = accept(ls, nullptr, nullptr);
    if (fd < 0) continue;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::string buf;
    char tmp[4096];
    for (;;) {
      size_t end = buf.find("\r\n\r\n");
      if (end == std::string::npos) {
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n <= 0) break;
        buf.append(tmp, size_t(n));
        continue;
      }
      buf.erase(0, end + 4);  // requests carry no body
      if (write(fd, kResp, sizeof kResp - 1) != ssize_t(sizeof kResp - 1)) break;
    }
    close(fd);
  }
}

int call(int port, long n, long batch) {
  // Connected (TCP_NODELAY set) before the timed loop; the calls themselves are plain write()/read().
  int fd = txray::samples::connect_tcp("127.0.0.1", uint16_t(port));
  char req[256];
  char resp[256];
  constexpr long kChunk = 1000;
  std::vector<double> chunks, cpu_chunks;
  auto t0 = std::chrono::steady_clock::now();
  uint64_t c0 = thread_cpu_ns();
  for (long i = 0; i < n; ++i) {
    if (i % batch == 0) txray_begin("bench batch");
    int len = snprintf(req, sizeof req, "GET /item/%ld HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: */*\r\n\r\n", i, port);
    if (write(fd, req, size_t(len)) != len) {
      perror("write");
      return 1;
    }
    // The whole answer is 40 bytes; read until it is complete.
    size_t got = 0;
    while (got < 40) {
      ssize_t r = read(fd, resp + got, sizeof resp - got);
      if (r <= 0) {
        perror("read");
        return 1;
      }
      got += size_t(r);
    }
    if (got != 40 || memcmp(resp + 38, "ok", 2) != 0) {
      fprintf(stderr, "unexpected answer\n");
      return 1;
    }
    if (i % batch == batch - 1 || i == n - 1) txray_end(200, nullptr);
    if (i % kChunk == kChunk - 1) {
      auto t1 = std::chrono::steady_clock::now();
      uint64_t c1 = thread_cpu_ns();
      chunks.push_back(double(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) / kChunk);
      cpu_chunks.push_back(double(c1 - c0) / kChunk);
      t0 = t1;
      c0 = c1;
    }
  }
  close(fd);
  if (chunks.empty()) {
    fprintf(stderr, "N must be at least %ld\n", kChunk);
    return 2;
  }
  printf("ns_per_call %.0f cpu_ns_per_call %.0f\n", median(chunks), median(cpu_chunks));
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc == 3 && strcmp(argv[1], "--serve") == 0) return serve(atoi(argv[2]));
  if (argc == 5 && strcmp(argv[1], "--call") == 0) {
    long n = atol(argv[3]), batch = atol(argv[4]);
    if (n <= 0 || batch <= 0) {
      fprintf(stderr, "N and BATCH must be positive\n");
      return 2;
    }
    return call(atoi(argv[2]), n, batch);
  }
  fprintf(stderr, "usage: %s --serve PORT | --call PORT N BATCH\n", argv[0]);
  return 2;
} catch (const std::exception& e) {  // listen/connect failed
  fprintf(stderr, "txray-bench-http-call: %s\n", e.what());
  return 1;
}
