#include "shedder.h"

#include <algorithm>

#include "txray/v1/shed_bucket.h"

namespace txray::ingest {

void RollingP95::observe(uint64_t ns) {
  if (ring_.size() < kWindow) {
    ring_.push_back(ns);
  } else {
    ring_[next_] = ns;
    next_ = (next_ + 1) % kWindow;
  }
  ++seen_;
  // Every kRecompute values; while the app is new (its first 2 * kRecompute values), every 10.
  if (seen_ == kMinSamples || seen_ % kRecompute == 0 || (seen_ > kMinSamples && seen_ < 2 * kRecompute && seen_ % 10 == 0))
    recompute();
}

void RollingP95::recompute() {
  std::vector<uint64_t> scratch(ring_.begin(), ring_.end());  // every kRecompute values: a copy is cheap
  // Nearest rank: the ceil(0.95 n)-th smallest.
  size_t rank = (scratch.size() * 95 + 99) / 100;
  auto nth = scratch.begin() + static_cast<long>(rank - 1);
  std::nth_element(scratch.begin(), nth, scratch.end());
  p95_ = *nth;
}

bool is_failed(const v1::Transaction& t) {
  if (!t.error().empty()) return true;
  if (t.kind() == "process") return t.status() != 0;
  return t.status() >= 500;
}

double Shedder::share(double fill) const {
  if (!opts_.enabled || fill < opts_.start_fill) return 0;
  if (fill >= opts_.full_fill || opts_.full_fill <= opts_.start_fill) return 1;
  return (fill - opts_.start_fill) / (opts_.full_fill - opts_.start_fill);
}

bool Shedder::sheddable(const std::string& app, const v1::Transaction& t) const {
  if (t.kind() == "unattributed" || is_failed(t)) return false;
  if (opts_.keep_slower_than_ns > 0 && t.elapsed_ns() >= static_cast<uint64_t>(opts_.keep_slower_than_ns)) return false;
  auto it = apps_.find(app);
  if (it == apps_.end() || !it->second.known()) return false;
  return t.elapsed_ns() <= it->second.p95();
}

uint64_t Shedder::process(v1::Batch& b, double fill) {
  const std::string& app = b.agent().app().empty() ? b.agent().program() : b.agent().app();
  auto& txs = *b.mutable_transactions();
  auto it = apps_.find(app);
  if (it == apps_.end() && apps_.size() < kMaxApps) it = apps_.try_emplace(app).first;
  if (it != apps_.end())
    for (const auto& t : txs)
      if (t.kind() != "unattributed") it->second.observe(t.elapsed_ns());
  const double s = share(fill);
  if (s <= 0) return 0;
  entry_.clear();
  int kept = 0;
  uint64_t shed = 0;
  for (int i = 0; i < txs.size(); ++i) {
    const v1::Transaction& t = txs.Get(i);
    bool drop = false;
    if (sheddable(app, t)) {
      credit_ += s;
      if (credit_ >= 1) {
        credit_ -= 1;
        drop = true;
      }
    }
    if (!drop) {
      if (kept != i) txs.SwapElements(kept, i);
      ++kept;
      continue;
    }
    ++shed;
    const uint64_t minute = v1::shed_minute(t.start_unix_ns() + t.elapsed_ns());
    const uint32_t bucket = v1::shed_bucket(t.elapsed_ns());
    key_.assign(t.name());
    key_ += '\0';
    key_ += t.kind();
    key_ += '\0';
    key_.append(reinterpret_cast<const char*>(&minute), sizeof minute);
    key_.append(reinterpret_cast<const char*>(&bucket), sizeof bucket);
    auto [it, added] = entry_.try_emplace(key_, b.sampled_out_size());
    v1::ShedCount* c;
    if (added) {
      c = b.add_sampled_out();
      c->set_name(t.name());
      c->set_kind(t.kind());
      c->set_minute_unix_ns(minute);
      c->set_bucket(bucket);
      c->set_by_collector(true);
    } else {
      c = b.mutable_sampled_out(it->second);
    }
    c->set_count(c->count() + 1);
    c->set_elapsed_ns(c->elapsed_ns() + t.elapsed_ns());
  }
  while (txs.size() > kept) txs.RemoveLast();
  return shed;
}

}  // namespace txray::ingest
