#include "fd_table.h"

#include <new>

namespace txray::fds {

std::atomic<FdSlot*> g_chunks[kChunks];

FdSlot* get(int fd) {
  if (fd < 0 || fd >= (kChunks << kChunkBits)) return nullptr;
  auto& cell = g_chunks[fd >> kChunkBits];
  FdSlot* chunk = cell.load(std::memory_order_acquire);
  if (!chunk) {
    FdSlot* fresh = new (std::nothrow) FdSlot[1 << kChunkBits];
    if (!fresh) return nullptr;
    if (cell.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) chunk = fresh;
    else delete[] fresh;  // another thread won; chunk now holds its array
  }
  return &chunk[fd & ((1 << kChunkBits) - 1)];
}

void mark_agent(int fd) {
  if (FdSlot* s = get(fd)) s->kind.store(FdKind::agent, std::memory_order_release);
}

void forget_agent_marks() {
  for_each_used(0, (kChunks << kChunkBits) - 1, [](int, FdSlot& s) {
    if (s.kind.load(std::memory_order_relaxed) == FdKind::agent) s.kind.store(FdKind::none);
  });
}

}  // namespace txray::fds
