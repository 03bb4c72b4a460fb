#include "transport/sampler.h"

#include "core/counters.h"
#include "txray/v1/shed_bucket.h"

namespace txray::transport {

namespace {

bool failed(const Transaction& t) {
  if (!t.error.empty()) return true;
  if (t.kind == "process") return t.status != 0;
  return t.status >= 500;
}

// The low 56 bits of the trace id (its random part in W3C level 2), or of the txid when there is none.
uint64_t trace_bits(const Transaction& t) {
  uint64_t v = 0;
  bool any = false;
  for (int i = 9; i < 16; ++i) {
    v = (v << 8) | t.trace_id[i];
    any |= t.trace_id[i] != 0;
  }
  return any ? v : (t.txid & ((uint64_t(1) << 56) - 1));
}

}  // namespace

HeadSampler::HeadSampler(double rate, uint64_t keep_ns) : rate_(rate), keep_ns_(keep_ns) {
  if (rate_ < 0) rate_ = 0;
  threshold_ = rate_ >= 1 ? (uint64_t(1) << 56) : static_cast<uint64_t>(rate_ * double(uint64_t(1) << 56));
}

bool HeadSampler::keep(const Transaction& t) const {
  if (rate_ >= 1 || t.kind == "unattributed" || failed(t)) return true;
  if (keep_ns_ > 0 && t.elapsed_ns >= keep_ns_) return true;
  return trace_bits(t) < threshold_;
}

bool HeadSampler::count(const Transaction& t) {
  const uint64_t minute = v1::shed_minute(t.start_unix_ns + t.elapsed_ns);
  const uint32_t bucket = v1::shed_bucket(t.elapsed_ns);
  key_.assign(t.name);
  key_ += '\0';
  key_ += t.kind;
  key_ += '\0';
  key_.append(reinterpret_cast<const char*>(&minute), sizeof minute);
  key_.append(reinterpret_cast<const char*>(&bucket), sizeof bucket);
  auto it = index_.find(key_);
  if (it == index_.end()) {
    if (pending_.size() >= kMaxPending) return false;
    it = index_.emplace(key_, pending_.size()).first;
    pending_.push_back({t.name, t.kind, minute, bucket, 0, 0});
  }
  SampledCount& c = pending_[it->second];
  ++c.count;
  c.elapsed_ns += t.elapsed_ns;
  return true;
}

size_t HeadSampler::filter(std::vector<Transaction*>& batch) {
  if (!active()) return 0;
  size_t out = 0, kept = 0;
  for (Transaction* t : batch) {
    if (keep(*t) || !count(*t)) {
      batch[kept++] = t;
      continue;
    }
    tx::recycle(t);  // back to begin()'s pool
    ++out;
  }
  batch.resize(kept);
  if (out) counters().sampled_out.fetch_add(out, std::memory_order_relaxed);
  return out;
}

void HeadSampler::delivered() {
  pending_.clear();
  index_.clear();
}

}  // namespace txray::transport
