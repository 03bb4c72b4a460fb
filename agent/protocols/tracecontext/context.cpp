#include "protocols/tracecontext/context.h"

#include <cstring>
#include <string>

#include "core/config.h"
#include "core/recorder.h"
#include "core/transaction.h"

namespace txray {
namespace {

void attr(Transaction* tx, std::string_view key, std::string_view value) {
  Attr& a = tx->attrs.emplace_back();
  a.key.assign(key);
  a.value.assign(value);
}

std::string_view why(ListResult r) { return r == ListResult::truncated ? "truncated" : "malformed"; }

// HPACK integer with an N-bit prefix (RFC 7541 §5.1); the first byte's high bits are `first`.
size_t hpack_int(uint8_t first, int bits, size_t v, char* out) {
  size_t max = (size_t(1) << bits) - 1;
  if (v < max) {
    out[0] = char(first | v);
    return 1;
  }
  size_t k = 0;
  out[k++] = char(first | max);
  v -= max;
  while (v >= 128) {
    out[k++] = char(0x80 | (v & 0x7f));
    v >>= 7;
  }
  out[k++] = char(v);
  return k;
}

size_t hpack_field(std::string_view name, std::string_view value, char* out) {
  size_t k = 0;
  out[k++] = 0x00;  // literal without indexing, new name
  k += hpack_int(0x00, 7, name.size(), out + k);
  std::memcpy(out + k, name.data(), name.size());
  k += name.size();
  k += hpack_int(0x00, 7, value.size(), out + k);
  if (!value.empty()) std::memcpy(out + k, value.data(), value.size());
  return k + value.size();
}

}  // namespace

uint8_t own_trace_flags(const uint8_t trace_id[16], double sample_rate) {
  uint64_t bits = 0;
  for (int i = 9; i < 16; ++i) bits = bits << 8 | trace_id[i];
  uint64_t threshold = sample_rate >= 1 ? (uint64_t(1) << 56)
                                        : uint64_t((sample_rate > 0 ? sample_rate : 0) * double(uint64_t(1) << 56));
  return kFlagRandom | (bits < threshold ? kFlagSampled : 0);
}

void accept_context(Transaction* tx, const InboundContext& in) {
  if (!tx) return;
  TraceParent tp;
  // §3.2: one traceparent field; two or more are invalid as a whole (even if one of them is valid).
  if (in.traceparents == 1 && parse_traceparent(in.traceparent, tp)) {
    std::memcpy(tx->trace_id, tp.trace_id, 16);
    tx->parent_span_id = tp.parent_id;
    tx->trace_flags = int16_t(tp.flags & kKnownFlags);
    if (in.tracestates) {
      ListResult r = combine_tracestate(in.tracestate, in.tracestates, tx->tracestate);
      if (r == ListResult::dropped || r == ListResult::truncated) attr(tx, "tracestate_dropped", why(r));
    }
  }
  if (in.baggages) {
    ListResult r = combine_baggage(in.baggage, in.baggages, tx->baggage);
    if (r == ListResult::dropped) attr(tx, "baggage_dropped", "too long or malformed");
  }
}

bool outbound_context(Transaction* tx, OutboundContext* out) {
  uint64_t own_span;
  if (!tx || !rec::trace_context(tx, out->trace_id, &own_span)) return false;
  out->flags = tx->trace_flags >= 0 ? uint8_t(tx->trace_flags) : own_trace_flags(out->trace_id, config().sample_rate);
  out->tracestate = tx->tracestate;
  out->baggage = tx->baggage;
  return true;
}

size_t format_context_lines(const OutboundContext& c, uint64_t span, unsigned skip, char* out, size_t cap) {
  std::string_view ts = (skip & kOwnTraceState) ? std::string_view() : c.tracestate;
  std::string_view bg = (skip & kOwnBaggage) ? std::string_view() : c.baggage;
  if (ts.size() > kMaxTraceState || bg.size() > kMaxBaggage) return 0;
  size_t len = 13 + kTraceParentLen + 2 + (ts.empty() ? 0 : 12 + ts.size() + 2) + (bg.empty() ? 0 : 9 + bg.size() + 2);
  if (cap < len) return 0;
  size_t k = 0;
  auto put = [&](std::string_view s) {
    std::memcpy(out + k, s.data(), s.size());
    k += s.size();
  };
  put("traceparent: ");
  format_traceparent(c.trace_id, span, c.flags, out + k);
  k += kTraceParentLen;
  put("\r\n");
  if (!ts.empty()) {
    put("tracestate: ");
    put(ts);
    put("\r\n");
  }
  if (!bg.empty()) {
    put("baggage: ");
    put(bg);
    put("\r\n");
  }
  return k;
}

size_t hpack_context(const OutboundContext& c, uint64_t span, unsigned skip, char* out, size_t cap) {
  std::string_view ts = (skip & kOwnTraceState) ? std::string_view() : c.tracestate;
  std::string_view bg = (skip & kOwnBaggage) ? std::string_view() : c.baggage;
  if (ts.size() > kMaxTraceState || bg.size() > kMaxBaggage) return 0;
  size_t need = (2 + 11 + 1 + kTraceParentLen) + (ts.empty() ? 0 : 2 + 10 + 3 + ts.size()) +
                (bg.empty() ? 0 : 2 + 7 + 3 + bg.size());
  if (cap < need) return 0;
  size_t k = 0;
  if (!(skip & kOwnTraceParent)) {
    char tp[kTraceParentLen];
    format_traceparent(c.trace_id, span, c.flags, tp);
    k = hpack_field("traceparent", std::string_view(tp, kTraceParentLen), out);
  }
  if (!ts.empty()) k += hpack_field("tracestate", ts, out + k);
  if (!bg.empty()) k += hpack_field("baggage", bg, out + k);
  return k;
}

}  // namespace txray
