// write() then read() of 64 bytes on a connected socket pair, per iteration (two hooked calls). Run bare
// and with the agent preloaded (bench/hook_cost/run.sh) to get what the hooks add per call.
//   tcp_loopback: a 127.0.0.1 TCP connection made with connect() + accept(): both ends are descriptors
//                 the agent follows (outbound / inbound), so this is the byte-counting path;
//   unix_pair:    socketpair(): descriptors the agent does not follow, the cheapest path.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace {

struct Pair {
  int a = -1, b = -1;
  ~Pair() {
    if (a >= 0) close(a);
    if (b >= 0) close(b);
  }
};

void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

void tcp_pair(Pair& p) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&addr), len) || listen(l, 1) ||
      getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len))
    die("listen");
  p.a = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(p.a, reinterpret_cast<sockaddr*>(&addr), len)) die("connect");
  p.b = accept(l, nullptr, nullptr);
  if (p.b < 0) die("accept");
  int one = 1;
  setsockopt(p.a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  close(l);
}

void unix_pair(Pair& p) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) die("socketpair");
  p.a = sv[0];
  p.b = sv[1];
}

void write_read(benchmark::State& state, void (*make)(Pair&)) {
  Pair p;
  make(p);
  char out[64] = "not an http request, just bytes";
  char in[64];
  for (auto _ : state) {
    if (write(p.a, out, sizeof out) != ssize_t(sizeof out)) die("write");
    size_t got = 0;
    while (got < sizeof in) {
      ssize_t n = read(p.b, in + got, sizeof in - got);
      if (n <= 0) die("read");
      got += size_t(n);
    }
    benchmark::DoNotOptimize(in[0]);
  }
  state.SetItemsProcessed(state.iterations() * 2);  // calls
}

void BM_tcp_loopback(benchmark::State& s) { write_read(s, tcp_pair); }
void BM_unix_pair(benchmark::State& s) { write_read(s, unix_pair); }

}  // namespace

// HOOK_COST_ITERATIONS=N runs each benchmark exactly N iterations (instructions.sh counts instructions
// at two values of N: the difference is the loop's own cost, free of start-up).
int main(int argc, char** argv) {
  const char* fixed = std::getenv("HOOK_COST_ITERATIONS");
  using Fn = void (*)(benchmark::State&);
  const std::pair<const char*, Fn> all[] = {{"BM_tcp_loopback", BM_tcp_loopback}, {"BM_unix_pair", BM_unix_pair}};
  for (auto [name, fn] : all) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    if (fixed) b->Iterations(std::atoll(fixed));
    else b->MinTime(0.5);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
