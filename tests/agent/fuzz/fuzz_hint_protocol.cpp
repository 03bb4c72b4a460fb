// libFuzzer target: the runtime hint parser (agent/hints/hint_protocol.cpp) runs inside the host on bytes
// any program can write to the hint descriptor. It must never read past the length it is given, never
// accept a message that does not re-parse to the same fields, and never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hints/hint_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy: ASan reports any read past `size`.
  std::vector<char> buf(data, data + size);
  txray::hint::Message m;
  bool ok = txray::hint::parse(buf.data(), size, &m);
  if (ok && (m.op == 0 || !strchr("HRELOCADBUS", m.op))) abort();
  // R E O name a descriptor; C may (or means the thread's request); H L A D B U name none.
  if (ok && strchr("REO", m.op) && m.fd < 0) abort();
  if (ok && m.op == 'O' && m.req_fd < 0) abort();
  if (ok && m.op == 'B' && m.n == 0) abort();  // a board has slots
  // S names a caller span (never 0) or nothing (S alone): exactly 16 hex digits or none.
  if (ok && m.op == 'S' && m.token == 0 && strnlen(buf.data(), size) != 1) abort();
  return 0;
}
