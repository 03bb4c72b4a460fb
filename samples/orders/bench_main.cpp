// txray-orders-bench: the reference comparison. For every method (GetOrderStatus, GetCustomers n=20 and
// n=50) and channel, C clients call the service as fast as they can for a few seconds; the cells take
// turns over several rounds (so that a noisy neighbour hurts every channel alike), and the table gives
// the median throughput over the rounds, mean and p95 latency over all calls, the CPU per call (driver and,
// with --server-pid, server) and the bytes per call on the wire, as in the article's figures.
//
// --call CHANNEL METHOD ID [N] makes one call and prints the decoded result as JSON (for tests).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

#include "channels.h"
#include "client.h"
#include "dataset.h"
#include "service.h"
#include "stats.h"

using namespace txray::samples;
using namespace txray::samples::orders;

namespace {

struct Workload {
  std::string label;  // "GetOrderStatus", "GetCustomers(20)"
  Method method;
  uint32_t n;
};

struct CellResult {
  std::vector<double> round_rates;  // calls/s per round
  std::vector<double> round_cpu_us;  // CPU per call (us) per round: readers compare cells round by round
  std::vector<int64_t> latencies_ns;
  uint64_t calls = 0, errors = 0, bytes_written = 0, bytes_read = 0;
  int64_t cpu_ns = 0;  // this driver's CPU plus the server's (with --server-pid) while the clock ran
  std::string first_error;
};

// CPU time (user + system) this process and, when pid > 0, the server process have used so far. CPU per
// call, unlike calls/s, hardly moves when other programs compete for the machine. Both are read in ns
// from the processes' CPU clocks (the server's through clock_getcpuclockid: its threads, the exited
// ones included); /proc/PID/stat (10 ms ticks: a cell of 50 ms could be off by 20%) only where the
// server's clock cannot be read.
int64_t cpu_now_ns(int server_pid) {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  int64_t ns = ts.tv_sec * 1000000000LL + ts.tv_nsec;
  clockid_t server_clock;
  if (server_pid > 0 && clock_getcpuclockid(server_pid, &server_clock) == 0 && clock_gettime(server_clock, &ts) == 0)
    return ns + ts.tv_sec * 1000000000LL + ts.tv_nsec;
  if (server_pid > 0) {
    std::ifstream f("/proc/" + std::to_string(server_pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');  // the command name may hold spaces: fields start after it
    if (close == std::string::npos) throw std::runtime_error("cannot read /proc/" + std::to_string(server_pid) + "/stat");
    std::istringstream in(stat.substr(close + 2));
    std::string field;
    long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {  // utime and stime are fields 14 and 15
      if (i == 14) utime = std::stoll(field);
      if (i == 15) stime = std::stoll(field);
    }
    ns += (utime + stime) * (1000000000LL / sysconf(_SC_CLK_TCK));
  }
  return ns;
}

struct Endpoint {
  std::string host = "127.0.0.1";
  uint16_t tcp_port = 0, http_port = 0;
};

Request make_request(const Workload& w, uint64_t& rng) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  Request r;
  r.method = w.method;
  if (w.method == Method::GetOrderStatus) {
    r.order_id = 1 + static_cast<int64_t>(rng % kOrders);
  } else {
    r.customer_id = static_cast<int64_t>(rng % (kCustomers - w.n));
    r.n = w.n;
  }
  return r;
}

bool valid(const Workload& w, const Response& r) {
  return r.code == Code::Ok && (w.method == Method::GetOrderStatus || r.customers.size() == w.n);
}

// One round of one cell: `clients` threads, each with its own connection, for `seconds`.
void run_cell(const Endpoint& ep, Channel ch, const Workload& w, int clients, double seconds, int round,
              int server_pid, CellResult& out) {
  std::mutex mu;
  std::atomic<bool> go{false}, stop{false};
  std::atomic<int> ready{0};
  uint64_t calls_this_round = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      uint64_t rng = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(t + 1 + 97 * round);
      std::vector<int64_t> lat;
      uint64_t errors = 0, calls = 0, w0 = 0, r0 = 0;
      std::string first_error;
      Client client(ch, ep.host, ep.tcp_port, ep.http_port);
      try {  // connect and warm up before the clock starts
        client.call(make_request(w, rng));
        w0 = client.bytes_written();
        r0 = client.bytes_read();
      } catch (const std::exception& e) {
        first_error = e.what();
        ++errors;
      }
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      while (!stop.load() && first_error.empty()) {
        Request req = make_request(w, rng);
        long long t0 = mono_ns();
        try {
          Response r = client.call(req);
          lat.push_back(mono_ns() - t0);
          ++calls;
          if (!valid(w, r)) {
            if (errors++ == 0) first_error = "unexpected result: " + r.error;
          }
        } catch (const std::exception& e) {
          if (errors++ == 0) first_error = e.what();
          break;
        }
      }
      std::lock_guard lock(mu);
      out.latencies_ns.insert(out.latencies_ns.end(), lat.begin(), lat.end());
      out.calls += calls;
      calls_this_round += calls;
      out.errors += errors;
      out.bytes_written += client.bytes_written() - w0;
      out.bytes_read += client.bytes_read() - r0;
      if (out.first_error.empty()) out.first_error = first_error;
    });
  }
  while (ready.load() < clients) std::this_thread::yield();
  long long t0 = mono_ns();
  int64_t cpu0 = cpu_now_ns(server_pid);
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  int64_t cpu = cpu_now_ns(server_pid) - cpu0;
  out.cpu_ns += cpu;
  out.round_cpu_us.push_back(calls_this_round ? static_cast<double>(cpu) / static_cast<double>(calls_this_round) / 1e3 : 0.0);
  double elapsed = static_cast<double>(mono_ns() - t0) / 1e9;
  out.round_rates.push_back(static_cast<double>(calls_this_round) / elapsed);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

nlohmann::json response_json(const Response& r) {
  nlohmann::json j{{"code", static_cast<int>(r.code)}};
  if (r.code != Code::Ok) j["error"] = r.error;
  j["status"] = r.status;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : r.customers)
    rows.push_back({c.id, c.name, c.company, c.email, c.phone, c.address, c.city, c.country, c.balance_cents});
  j["customers"] = rows;
  return j;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) v.push_back(item);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"txray-orders-bench: throughput and latency of the order service per channel and method"};
  std::string tcp, http, channels_arg = "tcp-binary,http-binary,http-json,http-xml";
  std::string methods_arg = "GetOrderStatus,GetCustomers20,GetCustomers50";
  int clients = 4, rounds = 3, server_pid = 0;
  double seconds = 1.0;
  bool json_out = false;
  std::vector<std::string> call;
  app.add_option("--tcp", tcp, "host:port of the raw-TCP channel");
  app.add_option("--http", http, "host:port of the HTTP channels");
  app.add_option("--channels", channels_arg, "comma-separated channels")->capture_default_str();
  app.add_option("--methods", methods_arg, "comma-separated: GetOrderStatus, GetCustomers<N>")->capture_default_str();
  app.add_option("-c,--clients", clients, "concurrent clients per cell")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--seconds", seconds, "length of one cell in one round")->capture_default_str()->check(CLI::Range(0.05, 3600.0));
  app.add_option("--rounds", rounds, "rounds over all cells")->capture_default_str()->check(CLI::Range(1, 100));
  app.add_flag("--json", json_out, "print the table as JSON");
  app.add_option("--server-pid", server_pid, "also count this (local) server process's CPU in CPU per call")
      ->check(CLI::PositiveNumber);
  app.add_option("--call", call, "one call: CHANNEL METHOD ID [N]; prints the result as JSON")->expected(3, 4);
  CLI11_PARSE(app, argc, argv);

  Endpoint ep;
  std::vector<Channel> channels;
  std::vector<Workload> workloads;
  try {
    std::string h;
    if (!tcp.empty()) parse_host_port(tcp, ep.host, ep.tcp_port);
    if (!http.empty()) parse_host_port(http, h, ep.http_port), ep.host = tcp.empty() ? h : ep.host;
    if (!call.empty()) {
      auto ch = parse_channel(call[0]);
      auto m = parse_method(call[1]);
      if (!ch || !m) throw std::runtime_error("--call: unknown channel or method");
      if ((*ch == Channel::TcpBinary ? ep.tcp_port : ep.http_port) == 0)
        throw std::runtime_error("--call: give the port of that channel");
      Request r;
      r.method = *m;
      (*m == Method::GetOrderStatus ? r.order_id : r.customer_id) = std::stoll(call[2]);
      if (*m == Method::GetCustomers) r.n = call.size() > 3 ? static_cast<uint32_t>(std::stoul(call[3])) : 20;
      Client c(*ch, ep.host, ep.tcp_port, ep.http_port);
      Response resp = c.call(r);
      nlohmann::json j = response_json(resp);
      j["bytes_written"] = c.bytes_written();
      j["bytes_read"] = c.bytes_read();
      std::printf("%s\n", j.dump().c_str());
      return 0;
    }
    for (const auto& s : split(channels_arg)) {
      auto c = parse_channel(s);
      if (!c) throw std::runtime_error("unknown channel '" + s + "'");
      if ((*c == Channel::TcpBinary ? ep.tcp_port : ep.http_port) == 0)
        throw std::runtime_error("channel " + s + " needs " + (*c == Channel::TcpBinary ? "--tcp" : "--http"));
      channels.push_back(*c);
    }
    for (const auto& s : split(methods_arg)) {
      if (s == "GetOrderStatus") {
        workloads.push_back({s, Method::GetOrderStatus, 0});
      } else if (s.rfind("GetCustomers", 0) == 0 && s.size() > 12) {
        uint32_t n = static_cast<uint32_t>(std::stoul(s.substr(12)));
        if (n == 0 || n > kMaxPage) throw std::runtime_error("page size out of range in " + s);
        workloads.push_back({"GetCustomers(" + std::to_string(n) + ")", Method::GetCustomers, n});
      } else {
        throw std::runtime_error("unknown method '" + s + "'");
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-orders-bench: %s\n", e.what());
    return 2;
  }

  std::vector<std::vector<CellResult>> res(workloads.size(), std::vector<CellResult>(channels.size()));
  for (int round = 0; round < rounds; ++round)
    for (size_t w = 0; w < workloads.size(); ++w)
      for (size_t c = 0; c < channels.size(); ++c)
        run_cell(ep, channels[c], workloads[w], clients, seconds, round, server_pid, res[w][c]);

  nlohmann::json rows = nlohmann::json::array();
  bool failed = false;
  if (!json_out)
    std::printf("%d clients per cell, %d rounds of %.2f s; calls/s = median over rounds; CPU = %s per call\n\n",
                clients, rounds, seconds, server_pid ? "driver + server" : "driver only");
  for (size_t w = 0; w < workloads.size(); ++w) {
    if (!json_out)
      std::printf("%-18s %-12s %9s %9s %9s %9s %11s %11s %11s %7s\n", workloads[w].label.c_str(), "channel", "calls",
                  "calls/s", "mean ms", "p95 ms", "CPU us/call", "req B/call", "resp B/call", "vs tcp");
    double base = 0;
    for (size_t c = 0; c < channels.size(); ++c) {
      const CellResult& r = res[w][c];
      LatencyStats s = latency_stats(r.latencies_ns);
      double rate = median(r.round_rates);
      if (channels[c] == Channel::TcpBinary) base = rate;
      double n = r.calls ? static_cast<double>(r.calls) : 1.0;
      double req_b = static_cast<double>(r.bytes_written) / n, resp_b = static_cast<double>(r.bytes_read) / n;
      double cpu_us = static_cast<double>(r.cpu_ns) / n / 1e3;
      if (r.errors) {
        failed = true;
        std::fprintf(stderr, "txray-orders-bench: %s on %s: %llu errors, first: %s\n", workloads[w].label.c_str(),
                     channel_name(channels[c]), static_cast<unsigned long long>(r.errors), r.first_error.c_str());
      }
      rows.push_back({{"method", method_name(workloads[w].method)}, {"n", workloads[w].n},
                      {"channel", channel_name(channels[c])}, {"clients", clients}, {"calls", r.calls},
                      {"errors", r.errors}, {"calls_per_s", rate}, {"round_rates", r.round_rates},
                      {"mean_ms", s.mean_ms}, {"p95_ms", s.p95_ms}, {"cpu_us_per_call", cpu_us}, {"round_cpu_us", r.round_cpu_us},
                      {"cpu_includes_server", server_pid > 0}, {"req_bytes", req_b}, {"resp_bytes", resp_b}});
      if (!json_out) {
        std::string rel = base > 0 ? std::to_string(static_cast<int>(rate / base * 100 + 0.5)) + "%" : "-";
        std::printf("%-18s %-12s %9llu %9.0f %9.3f %9.3f %11.1f %11.0f %11.0f %7s\n", "", channel_name(channels[c]),
                    static_cast<unsigned long long>(r.calls), rate, s.mean_ms, s.p95_ms, cpu_us, req_b, resp_b, rel.c_str());
      }
    }
    if (!json_out) std::printf("\n");
  }
  if (json_out) std::printf("%s\n", nlohmann::json{{"rows", rows}}.dump().c_str());
  return failed ? 1 : 0;
}
