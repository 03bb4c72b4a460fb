// Bounded lock-free queue of pointers (Dmitry Vyukov's bounded MPMC ring, used here with many producers
// - the host's threads - and one consumer, the agent thread). push() never blocks and never allocates:
// when the ring is full it returns false and the caller drops (and counts) the item.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace txray {

template <typename T>
class MpscQueue {
 public:
  // Capacity is rounded up to a power of two (at least 2).
  explicit MpscQueue(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    cells_ = std::make_unique<Cell[]>(cap);
    for (size_t i = 0; i < cap; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  size_t capacity() const { return mask_ + 1; }

  bool push(T* item) {
    size_t pos = enqueue_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->seq.load(std::memory_order_acquire);
      intptr_t diff = intptr_t(seq) - intptr_t(pos);
      if (diff == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
    cell->item = item;
    cell->seq.store(pos + 1, std::memory_order_release);
    return true;
  }

  // nullptr when empty.
  T* pop() {
    size_t pos = dequeue_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->seq.load(std::memory_order_acquire);
      intptr_t diff = intptr_t(seq) - intptr_t(pos + 1);
      if (diff == 0) {
        if (dequeue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return nullptr;  // empty
      } else {
        pos = dequeue_.load(std::memory_order_relaxed);
      }
    }
    T* item = cell->item;
    cell->seq.store(pos + mask_ + 1, std::memory_order_release);
    return item;
  }

 private:
  struct Cell {
    std::atomic<size_t> seq{0};
    T* item = nullptr;
  };
  std::unique_ptr<Cell[]> cells_;
  size_t mask_ = 0;
  alignas(64) std::atomic<size_t> enqueue_{0};
  alignas(64) std::atomic<size_t> dequeue_{0};
};

}  // namespace txray
