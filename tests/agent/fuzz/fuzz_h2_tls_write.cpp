// libFuzzer target: the layout of a TLS write that gets traceparent fields (agent/protocols/http2/h2_inject.cpp:
// H2WholeWrite), driven as agent/hooks/ssl_hooks.cpp's h2_tls_write() drives it, against an OpenSSL
// that takes any number of bytes per call or fails (WANT_WRITE) any number of times. Checked:
//  - W is the program's bytes with each accepted field in place (frame length grown by the field, the
//    field at its point), and never more than `room` bytes longer than the program's bytes;
//  - fields that do not fit the room, come out of order or are too many are refused, and W is then the
//    same as without them;
//  - every retry writes from the same address (what is left of W), W stays pending until all of it was
//    taken, and then the program's own byte count is what is reported.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocols/http2/h2_inject.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what) {
  fprintf(stderr, "invariant broken: %s\n", what);
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string prog = in.ConsumeRandomLengthString(8192);
  size_t room = in.ConsumeIntegralInRange<size_t>(0, 600);
  H2WholeWrite w;
  w.begin(prog.data(), prog.size(), room);
  std::string expect;
  size_t pos = 0, added = 0, grown = 0;
  int nedits = in.ConsumeIntegralInRange(0, 40);
  for (int e = 0; e < nedits && prog.size() > 10; ++e) {
    size_t frame_at = in.ConsumeIntegralInRange<size_t>(0, prog.size() - 10);
    size_t at = in.ConsumeIntegralInRange<size_t>(frame_at, prog.size());
    uint32_t frame_len = in.ConsumeIntegralInRange<uint32_t>(0, 0xffffff);
    std::string field = in.ConsumeRandomLengthString(140);
    bool ok = w.add(frame_at, at, frame_len, field.data(), field.size(), uint32_t(e));
    bool should = added < H2WholeWrite::kMaxEdits && frame_at >= pos && at >= frame_at + 9 && at <= prog.size() &&
                  field.size() <= room - grown && field.size() <= H2Injector::kMaxField &&
                  frame_len + field.size() <= 0xffffff;
    if (ok != should) fail(ok ? "a field was added that must be refused" : "a field that fits was refused");
    if (!ok) continue;
    if (w.tag(added) != uint32_t(e)) fail("tags out of order");
    std::string r = prog.substr(frame_at, at - frame_at);
    uint32_t g = frame_len + uint32_t(field.size());
    r[0] = char(g >> 16);
    r[1] = char(g >> 8);
    r[2] = char(g);
    expect += prog.substr(pos, frame_at - pos) + r + field;
    pos = at;
    grown += field.size();
    ++added;
  }
  expect += prog.substr(pos);
  bool has = w.finish();
  if (has != (added > 0)) fail("finish() disagrees with the fields added");
  if (w.edits() != added) fail("edit count");
  if (!has) return 0;
  if (w.wire() != expect) fail("W is not the program's bytes with the fields in place");
  if (w.wire().size() > prog.size() + room) fail("W grew beyond the room");
  if (w.program_len() != prog.size()) fail("the program's count changed");
  // The writes: any number of failures (nothing taken) and partial takes, each from what is left.
  std::string out;
  for (int guard = 0; w.pending() && guard < 100000; ++guard) {
    const char* p = w.rest();
    if (p != w.wire().data() + out.size()) fail("a retry does not continue at the same address");
    size_t take = in.remaining_bytes() ? in.ConsumeIntegralInRange<size_t>(0, w.rest_len()) : w.rest_len();
    if (take == 0) continue;  // WANT_WRITE: the program retries
    out.append(p, take);
    bool done = w.wrote(take);
    if (done != (out.size() == expect.size())) fail("pending does not match what was written");
  }
  if (w.pending() || out != expect) fail("not all of W went out, or other bytes did");
  return 0;
}
