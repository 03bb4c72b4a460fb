// txray-relay-client: the user's browser in the GZIP case. Sends N GET /page requests to the relay (C at
// a time), decompresses gzip responses, checks each one is a well-formed page, and prints latency
// statistics and what the relay reported about its own decompression and compression.
#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "gzip.h"
#include "http.h"
#include "service.h"
#include "stats.h"
#include "text.h"

using namespace txray::samples;

int main(int argc, char** argv) {
  CLI::App app{"txray-relay-client: drives the relay and prints latency statistics"};
  std::string relay_addr;
  int requests = 10, concurrency = 1;
  std::string gzip = "on", save;
  bool json = false;
  app.add_option("--relay", relay_addr, "relay host:port")->required();
  app.add_option("-n,--requests", requests, "number of requests")->capture_default_str()->check(CLI::Range(1, 10000000));
  app.add_option("-c,--concurrency", concurrency, "requests in flight")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--gzip", gzip, "send Accept-Encoding: gzip")->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  app.add_option("--save", save, "write the text of the last page to this file");
  app.add_flag("--json", json, "print the result as one JSON object");
  CLI11_PARSE(app, argc, argv);

  std::string host;
  uint16_t port = 0;
  try {
    parse_host_port(relay_addr, host, port);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray-relay-client: %s\n", e.what());
    return 2;
  }

  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<int64_t> lat;
  std::string last_text, first_error;
  long long errors = 0, wire_bytes = 0, relay_decompress_ns = 0, relay_compress_ns = 0, client_decompress_ns = 0;
  auto worker = [&] {
    HttpClient client(host, port);
    Headers h;
    if (gzip == "on") h["Accept-Encoding"] = "gzip";
    while (next.fetch_add(1) < requests) {
      long long t0 = mono_ns();
      try {
        HttpResponse r = client.request("GET", "/page", h);
        if (r.status != 200) throw std::runtime_error("status " + std::to_string(r.status) + ": " + r.body);
        const bool gz = r.header("content-encoding") == "gzip";
        long long d0 = mono_ns();
        std::string page = gz ? gzip_decompress(r.body) : std::move(r.body);
        long long d1 = gz ? mono_ns() : d0;
        std::string text = relay::page_text(page);
        long long t1 = mono_ns();
        std::lock_guard lock(mu);
        lat.push_back(t1 - t0);
        wire_bytes += std::atoll(r.header("content-length").c_str());
        client_decompress_ns += d1 - d0;
        relay_decompress_ns += std::atoll(r.header("x-relay-decompress-cpu-ns").c_str());
        relay_compress_ns += std::atoll(r.header("x-relay-compress-cpu-ns").c_str());
        last_text = std::move(text);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        if (errors++ == 0) first_error = e.what();
        client.close();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < concurrency; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  if (!save.empty()) {
    std::ofstream f(save, std::ios::binary);
    f << last_text;
  }
  LatencyStats s = latency_stats(lat);
  double n = s.count ? static_cast<double>(s.count) : 1.0;
  if (json) {
    std::printf(
        "{\"requests\":%zu,\"errors\":%lld,\"mean_ms\":%.3f,\"p50_ms\":%.3f,\"p95_ms\":%.3f,\"max_ms\":%.3f,"
        "\"body_bytes\":%.0f,\"text_bytes\":%zu,\"client_decompress_ms\":%.3f,\"relay_decompress_cpu_ms\":%.3f,"
        "\"relay_compress_cpu_ms\":%.3f}\n",
        s.count, errors, s.mean_ms, s.p50_ms, s.p95_ms, s.max_ms, static_cast<double>(wire_bytes) / n,
        last_text.size(), client_decompress_ns / n / 1e6, relay_decompress_ns / n / 1e6, relay_compress_ns / n / 1e6);
  } else {
    std::printf("requests %zu  errors %lld  mean %.1f ms  p50 %.1f ms  p95 %.1f ms  max %.1f ms\n", s.count, errors,
                s.mean_ms, s.p50_ms, s.p95_ms, s.max_ms);
    std::printf("per request: response body %.0f bytes, page text %zu bytes; client gunzip %.1f ms, "
                "relay gunzip %.1f ms CPU, relay gzip %.1f ms CPU\n",
                static_cast<double>(wire_bytes) / n, last_text.size(), client_decompress_ns / n / 1e6,
                relay_decompress_ns / n / 1e6, relay_compress_ns / n / 1e6);
  }
  if (errors) std::fprintf(stderr, "txray-relay-client: %lld failed requests, first: %s\n", errors, first_error.c_str());
  return errors ? 1 : 0;
}
