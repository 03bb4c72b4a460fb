#include "core/fd_table.h"

#include <new>

namespace txray::fds {

std::atomic<FdSlot*> g_chunks[kChunks];
std::atomic<int> g_chunks_used{0};
std::atomic<int> g_max_fd{-1};
std::atomic<uint32_t> g_agent_opening{0};
std::atomic<int> g_closed_lo{0};
std::atomic<int> g_closed_hi{-1};

FdSlot* get(int fd) {
  if (fd < 0 || fd >= (kChunks << kChunkBits)) return nullptr;
  auto& cell = g_chunks[fd >> kChunkBits];
  FdSlot* chunk = cell.load(std::memory_order_acquire);
  if (!chunk) {
    FdSlot* fresh = new (std::nothrow) FdSlot[1 << kChunkBits];
    if (!fresh) return nullptr;
    if (cell.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) chunk = fresh;
    else delete[] fresh;  // another thread won; chunk now holds its array
    // Walks (for_each_used: fork, close_range, exit) look at chunks below this only: reading all 4096
    // chunk pointers would fault 8 untouched pages into every forked child.
    int want = (fd >> kChunkBits) + 1;
    for (int cur = g_chunks_used.load(); cur < want && !g_chunks_used.compare_exchange_weak(cur, want);) {
    }
  }
  // Walks stop at the highest number ever given a slot: a forked child walks a handful of slots, not
  // the 1,024 of a chunk (three walks per child: after the fork, for the agent's descriptors, at exit).
  for (int cur = g_max_fd.load(std::memory_order_relaxed); cur < fd && !g_max_fd.compare_exchange_weak(cur, fd);) {
  }
  return &chunk[fd & ((1 << kChunkBits) - 1)];
}

void mark_agent(int fd) {
  if (FdSlot* s = get(fd)) s->kind.store(FdKind::agent, std::memory_order_release);
}

}  // namespace txray::fds
