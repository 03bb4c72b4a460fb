// What a runtime hint does (hint_protocol.h: apply). The parser is apart (hint_protocol.cpp) so that it
// can be fuzzed alone.
#include <cstring>

#include "core/attribution.h"
#include "hints/hint_board.h"
#include "hints/hint_protocol.h"
#include "protocols/dispatch/http_out.h"
#include "protocols/dispatch/socket_events.h"
#include "core/span_owner.h"
#include "core/transaction.h"

namespace txray::hint {
namespace {

void put(char* reply, size_t cap, const char* text) {
  if (cap == 0) return;
  size_t n = strnlen(text, cap - 1);
  memcpy(reply, text, n);
  reply[n] = 0;
}

void put_hex(char* reply, size_t cap, uint64_t v) {
  char s[17];
  static const char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 15];
  s[16] = 0;
  put(reply, cap, s);
}

}  // namespace

bool apply(const Message& m, char* reply, size_t cap) {
  switch (m.op) {
    case 'H':
      attr::set_hinted();
      put(reply, cap, "OK");
      return true;
    case 'R': {
      attr::set_hinted();
      Transaction* t = sock::request_on(m.fd, m.n, 0);
      put_hex(reply, cap, t ? t->txid : 0);
      return t != nullptr;
    }
    case 'E':
      attr::enter(ReqRef{m.fd, m.token});
      put(reply, cap, "OK");
      return true;
    case 'L':
      attr::leave();
      put(reply, cap, "OK");
      return true;
    case 'O': {
      FdSlot* s = fds::peek(m.fd);
      bool ok = s && s->kind.load(std::memory_order_relaxed) == FdKind::outbound;
      if (ok) http_out::set_owner(s, ReqRef{m.req_fd, m.token});
      put(reply, cap, ok ? "OK" : "NO");
      return ok;
    }
    case 'C': {
      // A handle the reply cannot hold would keep its request captured with nobody able to release it.
      if (cap < 17) {
        put(reply, cap, "NO");
        return false;
      }
      Transaction* t = m.fd >= 0 ? attr::resolve(ReqRef{m.fd, m.token}) : attr::current();
      uint64_t h = attr::capture(t);
      put_hex(reply, cap, h);
      return h != 0;
    }
    case 'A': {
      bool ok = attr::attach(m.token);
      put(reply, cap, ok ? "OK" : "NO");
      return ok;
    }
    case 'D':
      if (attr::attached() == m.token) attr::detach();
      attr::release(m.token);
      put(reply, cap, "OK");
      return true;
    case 'B': {
      attr::set_hinted();
      bool ok = board::attach(reply, cap, m.n, m.list);
      put(reply, cap, ok ? "OK" : "NO");
      return ok;
    }
    case 'U':
      board::detach();
      put(reply, cap, "OK");
      return true;
    case 'S': {
      if (m.token == 0) {
        span_owner::enable();
        put(reply, cap, "OK");
        return true;
      }
      if (cap < 17) {  // a span the reply cannot hold would be named for nothing
        put(reply, cap, "NO");
        return false;
      }
      uint64_t span = span_owner::name_span(m.token);
      put_hex(reply, cap, span);
      return span != 0;
    }
    default:
      put(reply, cap, "NO");
      return false;
  }
}

}  // namespace txray::hint
