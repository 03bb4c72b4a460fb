// Load shedding: when more arrives than the store can take, the collector stores the
// transactions that matter and only counts the rest. Runs on the writer thread, on each decoded batch as
// it is taken from the queue, just before it is written (so batches that waited in the queue while the
// writer fell behind are shed too, and the writer catches up at once: shedding a transaction costs it a
// fraction of a microsecond, storing one tens). The OTLP export, which takes batches on the receiving
// thread, sees every transaction.
//
// The trigger is the writer queue's fill when the batch is taken: the larger of (batches queued /
// queue_batches) and (decoded bytes queued / queue_bytes). Below `start_fill` nothing is shed. From there
// to `full_fill` a growing share of the *sheddable* transactions is shed (linear, 0 to 1), and from
// `full_fill` up all of them: a proportional controller, so the queue settles where the writer keeps up
// with what arrives.
//
// Never shed: a failed transaction (error text, or status >= 500; a non-zero exit status in process mode),
// one slower than its application's recent p95 (the 95th percentile of the app's last kWindow
// transactions, all of them, shed ones included), one at or above keep_slower_than_ns, an unattributed
// container, and any transaction of an app with fewer than kMinSamples seen (no p95 yet).
// What is shed is counted in the batch itself, as ShedCount entries with by_collector set (per name,
// minute and response-time bucket, with their total response time): the writer stores them in
// shed_counts, and readers add them to counts, throughput and percentiles.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "txray/v1/txray.pb.h"

namespace txray::ingest {

struct ShedOptions {
  bool enabled = true;
  double start_fill = 0.5;          // queue fill where shedding starts
  double full_fill = 0.8;           // ... and where every sheddable transaction is shed
  int64_t keep_slower_than_ns = 0;  // never shed these (0: no threshold, only the p95 rule)
};

// The rolling p95 of one application's response times: the last kWindow values, the percentile
// recomputed every kRecompute values (every 10 while the app is new), by nearest rank.
class RollingP95 {
 public:
  static constexpr size_t kWindow = 2048;
  static constexpr size_t kRecompute = 128;
  static constexpr size_t kMinSamples = 50;

  void observe(uint64_t ns);
  bool known() const { return seen_ >= kMinSamples; }
  uint64_t p95() const { return p95_; }

 private:
  void recompute();
  std::vector<uint64_t> ring_;
  size_t next_ = 0;
  uint64_t seen_ = 0;
  uint64_t p95_ = 0;
};

// A transaction that failed: never sampled out nor shed (the same rule as the report's error count).
bool is_failed(const v1::Transaction& t);

class Shedder {
 public:
  explicit Shedder(ShedOptions o = {}) : opts_(o) {}

  // The share (0..1) of sheddable transactions shed at this queue fill.
  double share(double fill) const;

  // Feeds every transaction of `b` to its app's p95; then, at this queue fill, removes the share of
  // sheddable ones from the batch (the others keep their order) and appends them to b.sampled_out as
  // ShedCount entries with by_collector set. Returns how many were shed.
  uint64_t process(v1::Batch& b, double fill);

  // Would this transaction of `app` be sheddable now? (Not failed, not slow, its app's p95 known.)
  bool sheddable(const std::string& app, const v1::Transaction& t) const;

 private:
  // Applications whose p95 is followed, at most (16 KiB each): a sender inventing app names cannot grow
  // the collector's memory; an app past the limit has no p95, so nothing of it is shed.
  static constexpr size_t kMaxApps = 4096;

  ShedOptions opts_;
  std::unordered_map<std::string, RollingP95> apps_;
  double credit_ = 0;  // the fractional share carried from one transaction to the next
  std::unordered_map<std::string, int> entry_;  // per process(): (name, kind, minute, bucket) -> entry
  std::string key_;
};

}  // namespace txray::ingest
