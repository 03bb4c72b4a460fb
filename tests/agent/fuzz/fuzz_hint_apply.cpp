// libFuzzer target: runtime hints parsed *and applied* (agent/hints/hint_protocol.cpp, hint_apply.cpp,
// hint_board.cpp) with the agent's real core, the way hooks/hint_hooks.cpp does it: any program can write
// any bytes to the hint descriptor, naming any descriptor, request number, token, handle or board size.
// Each input is a run of messages (one per line) on a thread with an inbound connection carrying a
// request in flight and an outbound connection, which then carries a request written the way the write
// hook writes it (http_out::write_through, where a board's slot is read). A board's slots are filled from
// the input (any inbound fd, any request number); a line starting with '#' is applied on a buffer exactly
// as long as the message, others on the shims' 32 bytes. Promises checked: never a crash or leak; the
// reply stays inside the program's buffer, NUL-terminated; a message applied with a false result replies
// "NO" or a zero token; the requests still end, with their responses, once the thread lets go.
#include <sys/uio.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/attribution.h"
#include "core/fd_table.h"
#include "hints/hint_board.h"
#include "hints/hint_protocol.h"
#include "protocols/dispatch/http_out.h"
#include "protocols/dispatch/socket_events.h"
#include "core/transaction.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n", what, int(a.size()), a.data());
  abort();
}

std::vector<std::unique_ptr<Transaction>> g_done;
void collect(Transaction* t) { g_done.emplace_back(t); }

constexpr int kIn = 900, kOut = 901;

// The "kernel" of the outbound write: takes every byte.
ssize_t take_all(int, const iovec* iov, int cnt, void*) {
  ssize_t n = 0;
  for (int i = 0; i < cnt; ++i) n += ssize_t(iov[i].iov_len);
  return n;
}

// The program's buffer for one message: the shims' 32 bytes, exactly the message's length ('#'), or for
// B the board itself (32 + 8 * slots bytes, slots filled from the input; '#': one slot short), and with
// B<slots>:<list> its owner list after the slots (header and entries from the input: any socket, any
// count — also past the list's size — any first command number).
std::vector<char> buffer_for(std::string_view line, const uint8_t* data, size_t size) {
  bool exact = !line.empty() && line[0] == '#';
  if (exact) line.remove_prefix(1);
  std::vector<char> buf(line.begin(), line.end());
  hint::Message m;
  if (!exact) buf.resize(hint::kBufferSize, '\0');
  if (hint::parse(buf.data(), buf.size(), &m) && m.op == 'B' && m.n <= 4096 && m.list <= 4096) {
    const size_t slots_end = hint::board::kHeader + 8 * size_t(m.n);
    size_t want = slots_end + (m.list ? hint::board::kListHeader + 8 * size_t(m.list) : 0);
    if (exact && want >= 8) want -= 8;
    buf.resize(want < buf.size() ? buf.size() : want, '\0');
    for (size_t i = 0; hint::board::kHeader + 8 * (i + 1) <= buf.size(); ++i) {
      int32_t slot[2] = {i % 3 ? int32_t(data[i % size]) + 800 : kIn, int32_t(int8_t(data[(i * 7) % size])) % 3};
      memcpy(buf.data() + hint::board::kHeader + 8 * i, slot, 8);
    }
    if (m.list && slots_end + hint::board::kListHeader <= buf.size()) {
      int32_t head[4] = {data[0] % 2 ? kOut : int32_t(data[size / 2]) + 800,
                         int32_t(int8_t(data[(size * 3) / 4])) + int32_t(m.list) / 2, int32_t(data[size - 1]), 0};
      memcpy(buf.data() + slots_end, head, sizeof head);
      for (size_t i = 0; slots_end + hint::board::kListHeader + 8 * (i + 1) <= buf.size(); ++i) {
        int32_t e[2] = {i % 2 ? kIn : int32_t(data[(i * 5) % size]) + 800, int32_t(int8_t(data[(i * 3) % size])) % 4};
        memcpy(buf.data() + slots_end + hint::board::kListHeader + 8 * i, e, 8);
      }
    }
  }
  return buf;
}

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

  std::vector<std::vector<char>> buffers;  // a board must outlive its use: every buffer lives to the end
  std::vector<uint64_t> handles;           // what 'C' replied: a capture keeps its request until released
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (!in.empty()) {
    size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    if (line.empty() || line.size() > 64) continue;
    buffers.push_back(buffer_for(line, data, size));
    std::vector<char>& buf = buffers.back();
    if (buf.empty()) continue;
    hint::Message m;
    if (!hint::parse(buf.data(), buf.size(), &m)) continue;
    bool ok = hint::apply(m, buf.data(), buf.size());
    if (!memchr(buf.data(), 0, buf.size())) fail("reply not terminated inside the buffer", line);
    std::string reply(buf.data());
    if (!ok && std::string("NO").compare(0, reply.size(), reply) != 0 &&
        reply.find_first_not_of('0') != std::string::npos)
      fail("refused without saying so", reply);
    if (ok && m.op == 'C') handles.push_back(strtoull(reply.c_str(), nullptr, 16));
  }

  // The owner list, read the way a protocol client reads it at the socket's next write: whatever the
  // shim's memory holds, the count stays inside the list and every owner is a request or none.
  if (FdSlot* out = fds::peek(kOut)) {
    uint32_t first = 0;
    size_t n = hint::board::listed(out, &first);
    if (n > hint::board::kMaxList) fail("an owner list longer than a board can hold");
    for (size_t i = 0; i < n; ++i) (void)hint::board::list_owner(i);
    hint::board::list_taken();
    if (hint::board::listed(out, &first) != 0) fail("an owner list read twice");
  }

  // A request written on the outbound socket the way the write hook writes it, and its response.
  static const char kCall[] = "GET /up?k=v HTTP/1.1\r\nHost: up\r\n\r\n";
  iovec v{const_cast<char*>(kCall), sizeof kCall - 1};
  ssize_t r = 0;
  FdSlot* s = sock::outbound_http(kOut);
  if (!s || !http_out::write_through(s, kOut, &v, 1, take_all, nullptr, &r)) sock::on_write(kOut, kCall, sizeof kCall - 1);
  else if (r != ssize_t(sizeof kCall - 1)) fail("the program's write was not counted whole");
  static const char kCallResp[] = "HTTP/1.1 204 No Content\r\n\r\n";
  sock::on_read(kOut, kCallResp, sizeof kCallResp - 1);

  // Whatever the hints did, the thread lets go (its board too, before its memory goes; and it releases
  // what it captured: a runtime whose captures are never released holds their requests, up to the fixed
  // number of capture slots), and the request in flight ends with its response.
  attr::leave();
  attr::detach();
  hint::board::detach();
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
