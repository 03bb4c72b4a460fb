// libFuzzer target: runtime hints parsed *and applied* (agent/core/hint_protocol.cpp, hint_apply.cpp) with
// the agent's real core, the way hooks/hint_hooks.cpp does it: any program can write any bytes to the
// hint descriptor, naming any descriptor, request number, token or handle. Each input is a run of
// messages (one per line) on a thread with an inbound connection carrying a request in flight and an
// outbound connection. Promises checked: never a crash or leak; the reply (written into the program's
// own buffer of the message's length) stays inside it, NUL-terminated; a message applied with a false
// result replies "NO" or a zero token; the request in flight still ends, with its response, afterwards.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attribution.h"
#include "hint_protocol.h"
#include "socket_events.h"
#include "transaction.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n", what, int(a.size()), a.data());
  abort();
}

std::vector<std::unique_ptr<Transaction>> g_done;
void collect(Transaction* t) { g_done.emplace_back(t); }

constexpr int kIn = 900, kOut = 901;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tx::set_sink(collect);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  g_done.clear();
  sock::on_accept(kIn, "10.0.0.7:5555");
  static const char kReq[] = "GET /work HTTP/1.1\r\nHost: h\r\n\r\n";
  sock::on_read(kIn, kReq, sizeof kReq - 1);
  StepRef c = sock::on_connect_begin(kOut, "10.0.0.9", 80);
  sock::on_connect_end(kOut, c, 0, 0, 40000);

  std::vector<uint64_t> handles;  // what 'C' replied: a capture keeps its request until released
  const char* p = reinterpret_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    const char* nl = static_cast<const char*>(memchr(p, '\n', left));
    size_t len = nl ? size_t(nl - p) : left;
    size_t n = len < hint::kBufferSize ? len : hint::kBufferSize;
    if (n > 0) {
      // The program's buffer: the shims' 32 bytes with the message NUL-terminated, or (a line starting
      // with '#') exactly as long as the message.
      bool exact = *p == '#';
      std::vector<char> buf(p + exact, p + n);
      if (!exact) buf.resize(hint::kBufferSize, '\0');
      n = buf.size();
      if (n == 0) {
        p = nl ? nl + 1 : p + left;
        left = nl ? left - len - 1 : 0;
        continue;
      }
      hint::Message m;
      if (hint::parse(buf.data(), n, &m)) {
        bool ok = hint::apply(m, buf.data(), n);
        if (!memchr(buf.data(), 0, n)) fail("reply not terminated inside the buffer", std::string_view(p, n));
        std::string reply(buf.data());
        if (ok && m.op == 'C') handles.push_back(strtoull(reply.c_str(), nullptr, 16));
        if (!ok && std::string("NO").compare(0, reply.size(), reply) != 0 &&
            reply.find_first_not_of('0') != std::string::npos)
          fail("refused without saying so", reply);
      }
    }
    if (!nl) break;
    p = nl + 1;
    left -= len + 1;
  }

  // Whatever the hints did, the thread lets go (and releases what it captured: a runtime whose
  // captures are never released holds their requests, up to the fixed number of capture slots), and
  // the request in flight ends with its response.
  attr::leave();
  attr::detach();
  for (uint64_t h : handles) attr::release(h);
  static const char kResp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  sock::on_write(kIn, kResp, sizeof kResp - 1);
  sock::on_close(kOut);
  sock::on_close(kIn);
  tx::make_current(nullptr);  // the thread's reference to the request it read
  bool found = false;
  for (auto& t : g_done) found |= t->name == "GET /work" && t->status == 200;
  if (!found) {
    for (auto& t : g_done) fprintf(stderr, "ended: %s %d %s\n", t->name.c_str(), t->status, t->error.c_str());
    fail("the request in flight did not end with its response");
  }
  g_done.clear();
  return 0;
}
