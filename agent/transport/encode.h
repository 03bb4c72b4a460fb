// Transactions of the core -> one serialized txray.v1.Batch (the bytes of one ZeroMQ message).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/counters.h"
#include "core/transaction.h"
#include "transport/drop_windows.h"
#include "transport/identity.h"
#include "transport/sampler.h"

namespace txray {

// Serializes one Batch (agent identity, cumulative drop counters, batch_seq, the transactions, the drop
// windows, the transactions of earlier batches that went into a connection, head sampling's counts and
// rate: AgentInfo.sample_rate, Batch.sampled_out). False when serialization fails (counted as encode_failed by the caller).
bool encode_batch(const Identity& id, const Counters& c, uint64_t seq,
                  const std::vector<Transaction*>& txs, std::string* out,
                  const std::vector<transport::DropWindow>& windows = {}, uint64_t sent_transactions = 0,
                  const std::vector<transport::SampledCount>* sampled_out = nullptr, double sample_rate = 0);

// A batch buffer kept at its size from one batch to the next: each batch is written over the
// last from the start, so it is not grown again from empty (a zero-filled resize per half again its
// size), and bytes() is the last batch encoded into it. The transport's, and self_cost's calibration.
struct BatchBuffer {
  std::string buf;  // its size: the most any batch needed so far
  size_t len = 0;
  std::string_view bytes() const { return std::string_view(buf.data(), len); }
};
bool encode_batch(const Identity& id, const Counters& c, uint64_t seq,
                  const std::vector<Transaction*>& txs, BatchBuffer* out,
                  const std::vector<transport::DropWindow>& windows = {}, uint64_t sent_transactions = 0,
                  const std::vector<transport::SampledCount>* sampled_out = nullptr, double sample_rate = 0);

}  // namespace txray
