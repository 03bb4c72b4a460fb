// The OTLP/HTTP exporter: a bounded queue of received batches and a thread of its own that turns them
// into spans (span_builder.h), packs them into ExportTraceServiceRequests, gzips and POSTs them to
// <endpoint>/v1/traces, retrying with back-off on 429/502/503/504 and on connection errors (honouring
// Retry-After). The collector's receiver hands it batches through BatchTap::offer and never waits: past
// the queue's bound a batch is dropped and counted (the status line shows it). `txray export` uses
// push_wait instead, which waits for room.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batch_tap.h"
#include "decoder.h"

namespace txray::otlp {

class HttpSender;

struct ExporterOptions {
  std::string endpoint;                    // http://HOST:4318 (the path /v1/traces is added) or a full URL
  std::vector<std::string> headers;        // extra "Name: value" headers (an API key, a tenant)
  size_t queue_transactions = 50000;       // transactions waiting to be exported, at most
  size_t queue_bytes = 256u << 20;         // … and their encoded size
  size_t max_spans_per_request = 4000;     // a request closes at this many spans…
  std::chrono::milliseconds linger{200};   // … or this long after its first batch
  std::chrono::milliseconds timeout{10000};  // per HTTP request
  std::chrono::seconds max_retry{300};     // a request still refused after this long is given up (counted failed)
  double backoff_initial_s = 0.5;          // without Retry-After: 0.5 s, doubling, at most backoff_max_s
  double backoff_max_s = 30;
  double retry_after_max_s = 300;          // a longer Retry-After is cut to this
  bool gzip = true;
  ingest::Limits limits;                   // the collector's: batches are decoded again exactly as stored
};

struct ExporterStats {
  std::atomic<uint64_t> offered_tx{0};     // transactions handed to the exporter
  std::atomic<uint64_t> sent_tx{0};        // in requests the back-end accepted
  std::atomic<uint64_t> sent_spans{0};
  std::atomic<uint64_t> requests{0};       // accepted requests
  std::atomic<uint64_t> dropped_tx{0};     // the queue was full (or still held them when the exporter stopped)
  std::atomic<uint64_t> failed_tx{0};      // refused for good (4xx but 429) or still refused after max_retry
  std::atomic<uint64_t> rejected_spans{0}; // the back-end accepted the request but said it dropped these
  std::atomic<uint64_t> retries{0};
  std::atomic<int64_t> refused_since_ns{0};  // (steady clock) the head request is being retried since then, 0: not
  std::atomic<long> last_refusal{0};       // HTTP status of the last refusal, 0: no HTTP answer
};

class Exporter : public ingest::BatchTap {
 public:
  explicit Exporter(ExporterOptions opts);
  ~Exporter() override;  // finish(0) if not finished

  // BatchTap: copy and queue, or drop and count when the queue is full. Never waits.
  void offer(const void* data, size_t size, const v1::Batch& decoded) override;
  std::string status() const override;
  void finish(std::chrono::milliseconds bound) override;

  // For `txray export`: queues a serialized batch of `transactions`, waiting for room.
  void push_wait(std::string bytes, uint64_t transactions);

  const ExporterStats& stats() const { return stats_; }
  size_t queued_transactions() const;
  const std::string& url() const { return url_; }

 private:
  struct Item {
    std::string bytes;
    uint64_t transactions = 0;
  };
  void run();
  bool pop(Item& out, std::chrono::steady_clock::time_point until);
  void send(HttpSender& sender, const std::string& body, uint64_t transactions, uint64_t spans);
  bool wait_abortable(double seconds);  // false when aborted
  void log_limited(const std::string& line);

  ExporterOptions opts_;
  std::string url_;
  ExporterStats stats_;
  mutable std::mutex mu_;
  std::condition_variable cv_not_empty_, cv_not_full_, cv_abort_, cv_done_;
  std::deque<Item> queue_;
  size_t queued_tx_ = 0, queued_bytes_ = 0;
  bool closing_ = false;   // no more items: deliver the queue and stop
  bool aborting_ = false;  // stop now: what is left is dropped and counted
  bool finished_ = false;
  bool done_ = false;       // the thread has left its loop
  std::atomic<bool> abort_{false};  // aborting_, for curl's progress callback
  int logged_ = 0;
  std::thread thread_;
};

}  // namespace txray::otlp

namespace txray::otlp {
// CLI helpers shared by `collect` and `export`: KEY=VALUE (or "Key: value") into header lines, and a
// check that the endpoint is an http:// or https:// URL. false with *why set when not.
bool header_lines(const std::vector<std::string>& in, std::vector<std::string>& out, std::string* why);
bool valid_endpoint(const std::string& endpoint, std::string* why);
}  // namespace txray::otlp
