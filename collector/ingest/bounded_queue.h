// A blocking queue bounded by item count and by total weight (bytes), between the collector's receiving
// thread and its writer thread. When it is full the receiver waits, ZeroMQ's queues fill up behind it,
// and the agents count their own drops: the collector never drops what it accepted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

namespace txray::ingest {

template <typename T>
class BoundedQueue {
 public:
  BoundedQueue(size_t max_items, size_t max_weight) : max_items_(max_items), max_weight_(max_weight) {}

  // Waits up to `timeout` for room; false when it timed out or the queue was closed, and then `item` is
  // left untouched (it is moved from only on success). An item heavier than max_weight is still accepted
  // into an empty queue, so nothing can be stuck forever.
  bool push(T&& item, size_t weight, std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    if (!not_full_.wait_for(lk, timeout, [&] {
          return closed_ || (items_.size() < max_items_ && (weight_ + weight <= max_weight_ || items_.empty()));
        }))
      return false;
    if (closed_) return false;
    items_.emplace_back(std::move(item), weight);
    weight_ += weight;
    not_empty_.notify_one();
    return true;
  }

  // Waits up to `timeout` for an item; nullopt on timeout, or when closed and drained.
  std::optional<T> pop(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    if (!not_empty_.wait_for(lk, timeout, [&] { return closed_ || !items_.empty(); })) return std::nullopt;
    if (items_.empty()) return std::nullopt;
    auto [item, w] = std::move(items_.front());
    items_.pop_front();
    weight_ -= w;
    not_full_.notify_one();
    return std::move(item);
  }

  // No more pushes; pop() still returns what is queued, then nullopt without waiting.
  void close() {
    std::lock_guard lk(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed() const {
    std::lock_guard lk(mu_);
    return closed_;
  }

  bool closed_and_empty() const {
    std::lock_guard lk(mu_);
    return closed_ && items_.empty();
  }

  size_t size() const {
    std::lock_guard lk(mu_);
    return items_.size();
  }

  // How full it is, 0..1: the larger of items / max_items and weight / max_weight (load shedding's trigger).
  double fill() const {
    std::lock_guard lk(mu_);
    double by_items = max_items_ ? static_cast<double>(items_.size()) / static_cast<double>(max_items_) : 0;
    double by_weight = max_weight_ ? static_cast<double>(weight_) / static_cast<double>(max_weight_) : 0;
    return by_items > by_weight ? by_items : by_weight;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::pair<T, size_t>> items_;
  size_t max_items_, max_weight_;
  size_t weight_ = 0;
  bool closed_ = false;
};

}  // namespace txray::ingest
