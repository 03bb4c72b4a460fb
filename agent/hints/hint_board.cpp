#include "hints/hint_board.h"

#include "protocols/dispatch/socket_events.h"
#include "core/transaction.h"

namespace txray::hint::board {
namespace {

struct Board {
  int32_t* slots = nullptr;  // 2 int32 per descriptor
  uint32_t count = 0;
};

thread_local Board t_board __attribute__((tls_model("initial-exec")));

// A ReqRef that names a request no longer there: call_tx sends the call to the unattributed steps
// rather than guessing (txids are never all ones).
constexpr uint64_t kGone = ~0ull;

}  // namespace

bool attach(void* base, size_t n, uint32_t slots) {
  if (!base || slots == 0 || slots > kMaxSlots || n < kHeader + size_t(slots) * 8 ||
      reinterpret_cast<uintptr_t>(base) % alignof(int32_t) != 0)
    return false;
  t_board.slots = reinterpret_cast<int32_t*>(static_cast<char*>(base) + kHeader);
  t_board.count = slots;
  return true;
}

void detach() { t_board = Board{}; }

bool take(int fd, ReqRef* out) {
  Board& b = t_board;
  if (__builtin_expect(b.slots == nullptr, 1) || fd < 0 || uint32_t(fd) >= b.count) return false;
  int32_t* s = b.slots + 2 * size_t(fd);
  int32_t in_fd = s[0], n = s[1];
  if (n == 0) return false;
  s[0] = 0;
  s[1] = 0;
  ReqRef r{in_fd >= 0 ? in_fd : 0, kGone};
  if (n > 0 && in_fd >= 0)
    if (Transaction* t = sock::request_on(in_fd, uint32_t(n), 0)) r.txid = t->txid;
  *out = r;
  return true;
}

void clear(int fd) {
  Board& b = t_board;
  if (__builtin_expect(b.slots == nullptr, 1) || fd < 0 || uint32_t(fd) >= b.count) return;
  b.slots[2 * size_t(fd)] = 0;
  b.slots[2 * size_t(fd) + 1] = 0;
}

}  // namespace txray::hint::board
