// Head sampling (TXRAY_SAMPLE_RATE): for services that produce more than the network should
// carry, the agent sends only a share of the fast, successful transactions and counts the rest.
//
// The decision is made on the agent thread, when it takes a finished transaction from the queue: by then
// the transaction is over and whether it failed or was slow is known, and the host's threads pay nothing
// for sampling (the hot path is unchanged). A sampled-out transaction costs the agent thread a hash
// lookup and an add instead of encoding and sending it.
//
// Kept always: a failed transaction (error text, status >= 500; process mode: a non-zero exit status),
// one at or above TXRAY_SAMPLE_KEEP_MS, an unattributed container. The others are kept when their trace
// id falls under the rate (the low 56 bits of the trace id compared with rate * 2^56, so agents with the
// same rate keep or drop a trace's transactions together), and otherwise counted per (name, kind, minute,
// response-time bucket) with their total response time. The counts ride on the next batch that goes into
// a connection (Batch.sampled_out) and are cleared then; their running total is the cumulative
// DropCounters.sampled_out.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/transaction.h"

namespace txray::transport {

struct SampledCount {
  std::string name;
  std::string kind;
  uint64_t minute_unix_ns = 0;
  uint32_t bucket = 0;
  uint64_t count = 0;
  uint64_t elapsed_ns = 0;
};

class HeadSampler {
 public:
  // Entries pending at most (one per name, minute, bucket): past this, transactions are kept rather
  // than counted, so memory stays bounded while the collector is away.
  static constexpr size_t kMaxPending = 4096;

  HeadSampler(double rate, uint64_t keep_ns);

  bool active() const { return rate_ < 1; }
  // Whether `t` is sent (true) or only counted.
  bool keep(const Transaction& t) const;
  // Takes the transactions that are not kept out of `batch` (deleting them, counting them); returns how many.
  size_t filter(std::vector<Transaction*>& batch);

  const std::vector<SampledCount>& pending() const { return pending_; }
  // The pending counts went into a connection.
  void delivered();

 private:
  bool count(const Transaction& t);

  double rate_;
  uint64_t keep_ns_;
  uint64_t threshold_;  // keep when the trace id's low 56 bits are below this
  std::vector<SampledCount> pending_;
  std::unordered_map<std::string, size_t> index_;
  std::string key_;
};

}  // namespace txray::transport
