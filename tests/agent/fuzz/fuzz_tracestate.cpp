// libFuzzer target: W3C tracestate and baggage values and the trace context a request's headers make
// (agent/protocols/tracecontext/tracestate.cpp, context.cpp). They run in the host on the trace
// headers of every inbound request; what they keep is written into every outbound call. Promises:
//  - a list kept is at most 32 valid members, at most 512 characters, no key twice, and combines back
//    to itself; a truncated one is members of the input in their order; a dropped or empty one is "";
//  - baggage kept is the non-empty trimmed lines joined by ",", at most 1024 characters, no control
//    characters (so the agent can never write a broken or split header);
//  - a transaction joins the trace only with exactly one valid traceparent, keeps tracestate only then,
//    and its outbound lines and HPACK fields are well formed, name by name, and fit the agent's bounds.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/transaction.h"
#include "protocols/tracecontext/context.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, std::string_view v) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n", what, int(v.size()), v.data());
  abort();
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    size_t c = s.find(',');
    out.push_back(s.substr(0, c));
    if (c == std::string_view::npos) return out;
    s.remove_prefix(c + 1);
  }
}

// One HPACK "literal without indexing, new name" field at p (7-bit prefixed lengths); false if not.
bool hpack_literal(const char*& p, const char* e, std::string& name, std::string& value) {
  auto integer = [&](size_t& v) {
    if (p >= e) return false;
    v = uint8_t(*p++) & 0x7f;
    if (v < 0x7f) return true;
    for (int shift = 0; p < e && shift < 28; shift += 7) {
      uint8_t b = uint8_t(*p++);
      v += size_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  if (p >= e || *p++ != 0) return false;
  size_t n;
  if (!integer(n) || size_t(e - p) < n) return false;
  name.assign(p, n);
  p += n;
  if (!integer(n) || size_t(e - p) < n) return false;
  value.assign(p, n);
  p += n;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<std::string> ts_lines, bg_lines;
  int nts = in.ConsumeIntegralInRange(0, 4), nbg = in.ConsumeIntegralInRange(0, 3);
  std::string tp = in.ConsumeRandomLengthString(80);
  size_t ntp = in.ConsumeIntegralInRange(0, 2);
  for (int i = 0; i < nts; ++i) ts_lines.push_back(in.ConsumeRandomLengthString(700));
  for (int i = 0; i < nbg; ++i) bg_lines.push_back(in.ConsumeRandomLengthString(700));
  uint64_t span = in.ConsumeIntegral<uint64_t>() | 1;
  unsigned skip = in.ConsumeIntegralInRange(0, 7);
  std::vector<std::string_view> ts(ts_lines.begin(), ts_lines.end()), bg(bg_lines.begin(), bg_lines.end());

  std::string out;
  ListResult r = combine_tracestate(ts.data(), ts.size(), out);
  if (r == ListResult::kept || r == ListResult::truncated) {
    if (out.empty() || out.size() > kMaxTraceState) fail("kept list empty or too long", out);
    auto m = split(out);
    if (m.size() > kMaxTraceStateMembers) fail("more than 32 members", out);
    for (size_t i = 0; i < m.size(); ++i) {
      if (!valid_tracestate_member(m[i])) fail("an invalid member kept", m[i]);
      for (size_t j = 0; j < i; ++j)
        if (m[j].substr(0, m[j].find('=')) == m[i].substr(0, m[i].find('='))) fail("a key twice", out);
    }
    std::string again;
    std::string_view one = out;
    if (combine_tracestate(&one, 1, again) != ListResult::kept || again != out) fail("does not combine to itself", out);
  } else if (!out.empty()) {
    fail("dropped or empty list left text", out);
  }

  std::string bag;
  ListResult b = combine_baggage(bg.data(), bg.size(), bag);
  if (b == ListResult::kept) {
    if (bag.empty() || bag.size() > kMaxBaggage) fail("baggage empty or too long", bag);
    for (char c : bag)
      if ((uint8_t(c) < 0x20 && c != '\t') || c == 0x7f) fail("control character in baggage", bag);
  } else if (!bag.empty()) {
    fail("dropped baggage left text", bag);
  }

  // The whole decision on a transaction, then what its calls carry.
  Transaction t;
  for (int i = 0; i < 16; ++i) t.trace_id[i] = uint8_t(0xa0 + i);
  InboundContext ic;
  ic.traceparent = tp;
  ic.traceparents = ntp;
  ic.tracestate = ts.data();
  ic.tracestates = ts.size();
  ic.baggage = bg.data();
  ic.baggages = bg.size();
  accept_context(&t, ic);
  TraceParent parsed;
  bool joins = ntp == 1 && parse_traceparent(tp, parsed);
  if (joins != (t.parent_span_id != 0)) fail("joined without exactly one valid traceparent", tp);
  if (!joins && (!t.tracestate.empty() || t.trace_flags != -1)) fail("tracestate or flags kept without joining", tp);
  if (joins && t.tracestate != out && !(t.tracestate.empty() && r != ListResult::kept && r != ListResult::truncated))
    fail("transaction tracestate differs from the combined list", t.tracestate);
  if (t.baggage != bag) fail("transaction baggage differs", t.baggage);

  OutboundContext oc;
  if (!outbound_context(&t, &oc)) fail("no outbound context", "");
  if (oc.flags & ~kKnownFlags) fail("reserved flags sent", "");
  std::vector<char> buf(kMaxContextLines);
  size_t n = format_context_lines(oc, span, skip & 3, buf.data(), buf.size());
  if (n == 0 || n > kMaxContextLines) fail("no lines for a transaction's context", "");
  std::string_view lines(buf.data(), n);
  std::string want = "traceparent: ";
  char v[kTraceParentLen];
  format_traceparent(oc.trace_id, span, oc.flags, v);
  want.append(v, kTraceParentLen).append("\r\n");
  if (!(skip & kOwnTraceState) && !oc.tracestate.empty()) want.append("tracestate: ").append(oc.tracestate).append("\r\n");
  if (!(skip & kOwnBaggage) && !oc.baggage.empty()) want.append("baggage: ").append(oc.baggage).append("\r\n");
  if (lines != want) fail("header lines", lines);
  if (format_context_lines(oc, span, skip & 3, buf.data(), n - 1) != 0) fail("lines written without room", "");

  std::vector<char> h(kMaxContextFields);
  size_t hn = hpack_context(oc, span, skip, h.data(), h.size());
  const char* p = h.data();
  const char* e = p + hn;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string name, value;
  while (p < e) {
    if (!hpack_literal(p, e, name, value)) fail("malformed HPACK field", std::string_view(h.data(), hn));
    fields.emplace_back(name, value);
  }
  std::vector<std::pair<std::string, std::string>> expect;
  if (!(skip & kOwnTraceParent)) expect.emplace_back("traceparent", std::string(v, kTraceParentLen));
  if (!(skip & kOwnTraceState) && !oc.tracestate.empty()) expect.emplace_back("tracestate", std::string(oc.tracestate));
  if (!(skip & kOwnBaggage) && !oc.baggage.empty()) expect.emplace_back("baggage", std::string(oc.baggage));
  if (fields != expect) fail("HPACK fields differ from the context", std::string_view(h.data(), hn));
  return 0;
}
