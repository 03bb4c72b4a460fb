// Bounded lock-free queue of pointers (Dmitry Vyukov's bounded MPMC ring, used here with many producers
// - the host's threads - and one consumer, the agent thread). push() never blocks and never allocates:
// when the ring is full it returns false and the caller drops (and counts) the item.
//
// Each cell keeps its sequence number minus its index (0 at the start), so the ring is valid as the
// zeroed pages an anonymous mmap() gives: they are touched only as cells are used. A forked child that
// sends one transaction faults one page in, not sixteen (the cost of short-lived children;
// calloc would clear the whole ring when it reuses heap memory).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <sys/mman.h>

namespace txray {

template <typename T>
class MpscQueue {
 public:
  // Capacity is rounded up to a power of two (at least 2).
  explicit MpscQueue(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    bytes_ = cap * sizeof(Cell);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cells_ = p == MAP_FAILED ? nullptr : static_cast<Cell*>(p);  // out of memory: every push fails
  }
  ~MpscQueue() {
    if (cells_) munmap(cells_, bytes_);
  }
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // True when every pushed item has been popped (exact only when no push or pop runs meanwhile).
  bool empty() const {
    return enqueue_.load(std::memory_order_seq_cst) == dequeue_.load(std::memory_order_seq_cst);
  }

  bool push(T* item) {
    if (__builtin_expect(!cells_, 0)) return false;
    size_t pos = enqueue_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->seq(pos & mask_);
      intptr_t diff = intptr_t(seq) - intptr_t(pos);
      if (diff == 0) {
        // Sequentially consistent: a producer's read of a flag after push() (transport.cpp: the agent
        // thread's `quiet`) is ordered after it (the same lock cmpxchg on x86).
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
    cell->item = item;
    cell->set_seq(pos & mask_, pos + 1);
    return true;
  }

  // nullptr when empty.
  T* pop() {
    if (__builtin_expect(!cells_, 0)) return nullptr;
    size_t pos = dequeue_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->seq(pos & mask_);
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
    cell->set_seq(pos & mask_, pos + mask_ + 1);
    return item;
  }

 private:
  struct Cell {  // plain data (valid as zeroed memory); the sequence is read and written atomically
    size_t lag;  // sequence number - index
    T* item;
    size_t seq(size_t index) { return std::atomic_ref<size_t>(lag).load(std::memory_order_acquire) + index; }
    void set_seq(size_t index, size_t seq) { std::atomic_ref<size_t>(lag).store(seq - index, std::memory_order_release); }
  };
  Cell* cells_ = nullptr;
  size_t bytes_ = 0;
  size_t mask_ = 0;
  alignas(64) std::atomic<size_t> enqueue_{0};
  alignas(64) std::atomic<size_t> dequeue_{0};
};

}  // namespace txray
