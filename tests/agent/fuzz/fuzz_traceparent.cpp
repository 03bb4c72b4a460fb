// libFuzzer target: W3C traceparent values (agent/protocols/tracecontext/traceparent.cpp). The parser runs in the host on
// the header of every inbound request and every outbound request the program writes itself; the
// formatter writes the header the agent inserts. Promises checked:
//  - a value accepted has non-zero ids, and formats back to itself (version 00: byte for byte after
//    trimming; a later version: its ids and flags);
//  - what the agent formats parses back to the same ids, unless an id is zero (then it is refused);
//  - the inserted header line is "traceparent: <55 chars>\r\n", or nothing when the room is short;
//  - the inbound request parser hands the header's value through unchanged (trimmed, cut at 128).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "protocols/http1/http_inject.h"
#include "protocols/http1/http_parse.h"
#include "protocols/tracecontext/traceparent.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, std::string_view v) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n", what, int(v.size()), v.data());
  abort();
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

bool same(const TraceParent& a, const TraceParent& b) {
  return memcmp(a.trace_id, b.trace_id, 16) == 0 && a.parent_id == b.parent_id && a.flags == b.flags;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // Ids for the formatter, taken from the end of the input.
  TraceParent mine;
  in.ConsumeData(mine.trace_id, 16);
  mine.parent_id = in.ConsumeIntegral<uint64_t>();
  mine.flags = in.ConsumeIntegral<uint8_t>();
  size_t cap = in.ConsumeIntegralInRange<size_t>(0, 96);
  std::string rest = in.ConsumeRemainingBytesAsString();
  std::vector<char> buf(rest.begin(), rest.end());  // exact size: ASan sees any read past the end
  std::string_view value(buf.data(), buf.size());

  TraceParent tp;
  if (parse_traceparent(value, tp)) {
    bool zero = true;
    for (uint8_t b : tp.trace_id) zero &= b == 0;
    if (zero || tp.parent_id == 0) fail("accepted an all-zero id", value);
    std::string_view t = trim(value);
    if (t.size() < kTraceParentLen) fail("accepted a short value", value);
    char out[kTraceParentLen];
    format_traceparent(tp.trace_id, tp.parent_id, tp.flags, out);
    std::string_view f(out, kTraceParentLen);
    if (t.substr(0, 2) == "00" ? t != f : t.substr(2, kTraceParentLen - 2) != f.substr(2))
      fail("accepted value does not format back to itself", value);
    TraceParent back;
    if (!parse_traceparent(f, back) || !same(back, tp)) fail("formatted value does not parse back", value);
  }

  char out[kTraceParentLen];
  format_traceparent(mine.trace_id, mine.parent_id, mine.flags, out);
  TraceParent back;
  bool zero = true;
  for (uint8_t b : mine.trace_id) zero &= b == 0;
  bool ok = parse_traceparent(std::string_view(out, kTraceParentLen), back);
  if (ok != (!zero && mine.parent_id != 0)) fail("formatted value accepted/refused wrongly", std::string_view(out, 55));
  if (ok && !same(back, mine)) fail("formatted value parses to other ids", std::string_view(out, 55));

  char sampled[kTraceParentLen];  // the agent's header always says "sampled"
  format_traceparent(mine.trace_id, mine.parent_id, 0x01, sampled);
  std::vector<char> line(cap);
  size_t len = format_traceparent_line(mine.trace_id, mine.parent_id, line.data(), cap);
  if (len != 0 && (len != 70 || memcmp(line.data(), "traceparent: ", 13) != 0 ||
                   memcmp(line.data() + 13, sampled, kTraceParentLen) != 0 || line[68] != '\r' || line[69] != '\n'))
    fail("bad header line", std::string_view(line.data(), len));
  if ((len == 0) != (cap < 70)) fail("header line refused with room / written without", value);

  // The value as the inbound request parser hands it on.
  if (value.find_first_of("\r\n") == std::string_view::npos && value.size() <= 1024) {
    std::string head = "GET / HTTP/1.1\r\ntraceparent:" + rest + "\r\n\r\n";
    http::RequestHead h;
    if (!http::parse_request_head(head, &h)) fail("request head with a traceparent refused", value);
    std::string_view want = trim(value).substr(0, 128);
    if (h.traceparent != want) fail("inbound traceparent value changed", h.traceparent);
  }
  return 0;
}
