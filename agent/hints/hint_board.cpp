#include "hints/hint_board.h"

#include "protocols/dispatch/socket_events.h"
#include "core/transaction.h"

namespace txray::hint::board {
namespace {

struct Board {
  int32_t* slots = nullptr;  // 2 int32 per descriptor
  uint32_t count = 0;
  int32_t* list = nullptr;   // the owner list's header, then its entries
  uint32_t list_cap = 0;
};

thread_local Board t_board __attribute__((tls_model("initial-exec")));

// A ReqRef that names a request no longer there: call_tx sends the call to the unattributed steps
// rather than guessing (txids are never all ones).
constexpr uint64_t kGone = ~0ull;

// The owner n names: the request (resolved now, as a slot's), nobody's (kGone), or not named (fd -1).
ReqRef owner_of(int32_t in_fd, int32_t n) {
  if (n == 0) return ReqRef{};
  ReqRef r{in_fd >= 0 ? in_fd : 0, kGone};
  if (n > 0 && in_fd >= 0)
    if (Transaction* t = sock::request_on(in_fd, uint32_t(n), 0)) r.txid = t->txid;
  return r;
}

}  // namespace

bool attach(void* base, size_t n, uint32_t slots, uint32_t list) {
  size_t want = kHeader + size_t(slots) * 8 + (list ? kListHeader + size_t(list) * 8 : 0);
  if (!base || slots == 0 || slots > kMaxSlots || list > kMaxList || n < want ||
      reinterpret_cast<uintptr_t>(base) % alignof(int32_t) != 0)
    return false;
  t_board.slots = reinterpret_cast<int32_t*>(static_cast<char*>(base) + kHeader);
  t_board.count = slots;
  t_board.list = list ? t_board.slots + 2 * size_t(slots) : nullptr;
  t_board.list_cap = list;
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
  *out = owner_of(in_fd, n);
  return true;
}

size_t listed(const FdSlot* slot, uint32_t* first) {
  Board& b = t_board;
  if (__builtin_expect(b.list == nullptr, 1) || !slot) return 0;
  int32_t fd = b.list[0], count = b.list[1];
  // Everything in the shim's memory is checked before use: a count past the list, a descriptor that
  // is not this socket's.
  if (count <= 0 || uint32_t(count) > b.list_cap || fds::peek(fd) != slot) return 0;
  *first = uint32_t(b.list[2]);
  return size_t(count);
}

ReqRef list_owner(size_t i) {
  Board& b = t_board;
  if (!b.list || i >= b.list_cap) return ReqRef{};
  return owner_of(b.list[4 + 2 * i], b.list[5 + 2 * i]);
}

void list_taken() {
  if (t_board.list) t_board.list[1] = 0;
}

size_t take_list(const FdSlot* slot, ReqRef* out, size_t cap, uint32_t* first) {
  size_t k = listed(slot, first);
  if (k == 0) return 0;
  if (k > cap) k = cap;
  for (size_t i = 0; i < k; ++i) out[i] = list_owner(i);
  list_taken();
  return k;
}

void clear(int fd) {
  Board& b = t_board;
  if (__builtin_expect(b.slots == nullptr, 1) || fd < 0) return;
  if (b.list && b.list[0] == fd) b.list[1] = 0;
  if (uint32_t(fd) >= b.count) return;
  b.slots[2 * size_t(fd)] = 0;
  b.slots[2 * size_t(fd) + 1] = 0;
}

}  // namespace txray::hint::board
