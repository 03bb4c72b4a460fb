// The agent's request cycle on its own, for bench/agent_cost/run.sh: a private HttpConn fed a request head
// and a response (transaction begun and ended, START and END rows), then encoded and freed — what the
// agent does for one request, without the program and the kernel around it.
//   txray-bench-agent-cost-cycle --cycles N [--count-only]
// prints "NS_PER_CYCLE NS_PER_CLOCK_READ" (process CPU time; one CLOCK_THREAD_CPUTIME_ID read), or
// nothing with --count-only (under callgrind, which counts the instructions).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "core/attribution.h"
#include "protocols/http1/http_conn.h"
#include "core/transaction.h"
#include "transport/encode.h"

namespace {

uint64_t cpu_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

constexpr char kHead[] =
    "GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: txray-bench-loadgen\r\nAccept: */*\r\n\r\n";
constexpr char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

void cycles(int n) {
  txray::HttpConn conn;
  conn.reset("127.0.0.1:40000", -1);
  std::vector<txray::Transaction*> batch;
  std::string buf;
  txray::Identity id;
  txray::Counters c;
  for (int i = 0; i < n; ++i) {
    conn.on_read(kHead, sizeof kHead - 1);
    txray::Transaction* t = conn.tx;
    if (!t) break;
    t->refs.fetch_add(1);  // not to the sink (there is none: it would be deleted)
    conn.on_write(kResponse, sizeof kResponse - 1);
    batch.push_back(t);
    if (batch.size() == 64 || i == n - 1) {
      txray::encode_batch(id, c, 1, batch, &buf);
      for (auto* x : batch) delete x;
      batch.clear();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int n = 10000;
  bool count_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--cycles") && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--count-only")) count_only = true;
  }
  if (count_only) {
    cycles(n);
    return 0;
  }
  cycles(200);  // warm
  uint64_t t0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
  cycles(n);
  double per_cycle = double(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - t0) / n;
  uint64_t c0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < 5000; ++i) cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  double per_read = double(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 5000;
  std::printf("%.1f %.1f\n", per_cycle, per_read);
  return 0;
}
