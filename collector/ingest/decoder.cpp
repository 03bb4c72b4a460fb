#include "decoder.h"

#include <google/protobuf/stubs/logging.h>

#include <cstdint>

#include "txray/v1/shed_bucket.h"

namespace txray::ingest {

namespace {

// ---- The decoded size, from the wire (estimate_decoded_bytes) ----

enum class Msg {
  batch, agent, drops, tx, step, summary, attribute, drop_window, shed_count, cost_units, stack, frame, hot_function, cpu_stack
};

size_t object_bytes(Msg m) {
  switch (m) {
    case Msg::batch: return sizeof(v1::Batch);
    case Msg::agent: return sizeof(v1::AgentInfo);
    case Msg::drops: return sizeof(v1::DropCounters);
    case Msg::tx: return sizeof(v1::Transaction);
    case Msg::step: return sizeof(v1::Step);
    case Msg::summary: return sizeof(v1::StepSummary);
    case Msg::attribute: return sizeof(v1::Attribute);
    case Msg::drop_window: return sizeof(v1::DropWindow);
    case Msg::shed_count: return sizeof(v1::ShedCount);
    case Msg::cost_units: return sizeof(v1::AgentCostUnits);
    case Msg::hot_function: return sizeof(v1::HotFunction);
    case Msg::cpu_stack: return sizeof(v1::CpuStack);
    case Msg::stack: return sizeof(v1::Stack);
    case Msg::frame: return sizeof(v1::Frame);
  }
  return 0;
}

// The nested message a length-delimited field holds, if it is one of the schema's message fields.
bool child_of(Msg m, uint64_t field, Msg* child) {
  switch (m) {
    case Msg::batch:
      if (field == 1) return *child = Msg::agent, true;
      if (field == 2) return *child = Msg::drops, true;
      if (field == 5) return *child = Msg::tx, true;
      if (field == 6) return *child = Msg::drop_window, true;
      if (field == 10) return *child = Msg::shed_count, true;
      return false;
    case Msg::agent:
      if (field == 13) return *child = Msg::cost_units, true;
      return false;
    case Msg::tx:
      if (field == 19) return *child = Msg::step, true;
      if (field == 20) return *child = Msg::summary, true;
      if (field == 21) return *child = Msg::attribute, true;
      if (field == 24) return *child = Msg::cpu_stack, true;
      return false;
    case Msg::step:
      if (field == 11) return *child = Msg::attribute, true;
      if (field == 19) return *child = Msg::hot_function, true;
      if (field == 18) return *child = Msg::stack, true;
      return false;
    case Msg::stack:
      if (field == 1) return *child = Msg::frame, true;
      return false;
    default: return false;
  }
}

// Highest field number of each message: anything above is kept by protobuf as an unknown field.
uint64_t max_field(Msg m) {
  switch (m) {
    case Msg::batch: return 10;
    case Msg::agent: return 16;
    case Msg::drops: return 8;
    case Msg::tx: return 27;
    case Msg::step: return 20;
    case Msg::summary: return 9;
    case Msg::attribute: return 2;
    case Msg::drop_window: return 6;
    case Msg::shed_count: return 7;
    case Msg::cost_units: return 9;
    case Msg::hot_function: return 3;
    case Msg::cpu_stack: return 2;
    case Msg::stack: return 1;
    case Msg::frame: return 3;
  }
  return 0;
}

bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t b = *p++;
    *v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

constexpr size_t kStringBytes = sizeof(std::string) + 8;  // a string object, its pointer, heap rounding
constexpr size_t kUnknownFieldBytes = 32;                  // an entry of protobuf's unknown field set

bool scan(Msg m, const uint8_t* p, const uint8_t* end, size_t* cost) {
  *cost += object_bytes(m) + sizeof(void*);
  while (p < end) {
    uint64_t tag;
    if (!read_varint(p, end, &tag)) return false;
    uint64_t field = tag >> 3;
    if (field == 0) return false;
    bool unknown = field > max_field(m);
    switch (tag & 7) {
      case 0: {
        uint64_t v;
        if (!read_varint(p, end, &v)) return false;
        if (unknown) *cost += kUnknownFieldBytes;
        break;
      }
      case 1:
        if (end - p < 8) return false;
        p += 8;
        if (unknown) *cost += kUnknownFieldBytes;
        break;
      case 5:
        if (end - p < 4) return false;
        p += 4;
        if (unknown) *cost += kUnknownFieldBytes;
        break;
      case 2: {
        uint64_t len;
        if (!read_varint(p, end, &len) || len > uint64_t(end - p)) return false;
        Msg child;
        if (child_of(m, field, &child)) {
          if (!scan(child, p, p + len, cost)) return false;
        } else {
          *cost += kStringBytes + len + (unknown ? kUnknownFieldBytes : 0);
        }
        p += len;
        break;
      }
      default: return false;  // groups (never sent by an agent) and invalid wire types
    }
  }
  return true;
}

// ---- Truncation (truncate_fields) ----

// Cuts `s` to at most `max` bytes, marker included, at a UTF-8 character boundary.
bool truncate_string(std::string* s, size_t max) {
  if (s->size() <= max) return false;
  std::string marker = std::string(kTruncatedMarker) + std::to_string(s->size()) + " bytes]";
  if (marker.size() > max) {  // an absurdly small limit: no room for the marker
    marker.clear();
  }
  size_t keep = max - marker.size();
  while (keep > 0 && (static_cast<unsigned char>((*s)[keep]) & 0xC0) == 0x80) --keep;  // not mid-character
  s->resize(keep);
  *s += marker;
  return true;
}

struct Truncator {
  const Limits& l;
  std::string* first;
  uint64_t count = 0;

  void cut(std::string* s, size_t max, const char* what) {
    size_t was = s->size();
    if (!truncate_string(s, max)) return;
    if (count++ == 0 && first) *first = std::string(what) + " of " + std::to_string(was) + " bytes";
  }

  template <typename Repeated>
  void attributes(Repeated* attrs, const char* owner) {
    int n = attrs->size();
    if (static_cast<size_t>(n) > l.max_attributes && l.max_attributes > 0) {
      int keep = static_cast<int>(l.max_attributes) - 1;  // room for the marker attribute
      attrs->DeleteSubrange(keep, n - keep);
      auto* marker = attrs->Add();
      marker->set_key("txray.truncated_attributes");
      marker->set_value(std::to_string(n - keep));
      if (count++ == 0 && first) *first = std::string(owner) + " with " + std::to_string(n) + " attributes";
    }
    for (auto& a : *attrs) {
      cut(a.mutable_key(), l.max_name_bytes, "attribute key");
      cut(a.mutable_value(), l.max_text_bytes, "attribute value");
    }
  }
};

// Returns "" or a description of the first violation; `what` names the field for the message.
std::string check_size(const std::string& s, size_t max, const char* what) {
  if (s.size() > max) return std::string(what) + " is " + std::to_string(s.size()) + " bytes (limit " +
                             std::to_string(max) + ")";
  return {};
}

template <typename Repeated>
std::string check_attributes(const Repeated& attrs, const Limits& l, const char* owner) {
  if (static_cast<size_t>(attrs.size()) > l.max_attributes)
    return std::string(owner) + " has " + std::to_string(attrs.size()) + " attributes";
  for (const auto& a : attrs) {
    if (auto e = check_size(a.key(), l.max_name_bytes, "attribute key"); !e.empty()) return e;
    if (auto e = check_size(a.value(), l.max_text_bytes, "attribute value"); !e.empty()) return e;
  }
  return {};
}

// CPU samples: an agent sends at most 8 hot functions per row and 200 stacks per transaction.
constexpr size_t kMaxHotPerStep = 64;
constexpr size_t kMaxCpuStacks = 4096;

bool known_kind(int k) { return k >= v1::START && k <= v1::MEMCACHED; }

std::string validate_transaction(const v1::Transaction& tx, const Limits& l) {
  if (tx.trace_id().size() != 0 && tx.trace_id().size() != 16)
    return "trace_id has " + std::to_string(tx.trace_id().size()) + " bytes (expected 0 or 16)";
  for (auto [s, what] : {std::pair{&tx.name(), "transaction name"}, {&tx.client_addr(), "client_addr"},
                         {&tx.kind(), "transaction kind"}}) {
    if (auto e = check_size(*s, l.max_name_bytes, what); !e.empty()) return e;
  }
  if (auto e = check_size(tx.error(), l.max_text_bytes, "transaction error"); !e.empty()) return e;
  if (auto e = check_attributes(tx.attributes(), l, "transaction"); !e.empty()) return e;
  // W3C tracestate: the agent sends at most 512 characters (tracecontext/tracestate.h); flags are a byte.
  if (auto e = check_size(tx.tracestate(), l.max_name_bytes, "tracestate"); !e.empty()) return e;
  if (tx.trace_flags() > 0xff) return "trace_flags " + std::to_string(tx.trace_flags()) + " is more than a byte";
  if (static_cast<size_t>(tx.steps_size()) > l.max_steps)
    return "transaction has " + std::to_string(tx.steps_size()) + " steps";
  // Times are stored as signed 64-bit values; start + elapsed must not wrap.
  if (tx.start_unix_ns() > static_cast<uint64_t>(INT64_MAX) || tx.elapsed_ns() > static_cast<uint64_t>(INT64_MAX) ||
      tx.start_unix_ns() + tx.elapsed_ns() > static_cast<uint64_t>(INT64_MAX))
    return "transaction start/elapsed out of range";
  for (int i = 0; i < tx.steps_size(); ++i) {
    const auto& s = tx.steps(i);
    if (!known_kind(s.kind())) return "step " + std::to_string(i) + " has unknown kind " + std::to_string(s.kind());
    if (s.parent() < -1 || s.parent() >= i)
      return "step " + std::to_string(i) + " has parent " + std::to_string(s.parent()) +
             " (must be -1 or an earlier step)";
    if (auto e = check_size(s.text(), l.max_text_bytes, "step text"); !e.empty()) return e;
    if (auto e = check_size(s.error(), l.max_text_bytes, "step error"); !e.empty()) return e;
    if (auto e = check_attributes(s.attributes(), l, "step"); !e.empty()) return e;
    if (static_cast<size_t>(s.hot_size()) > kMaxHotPerStep)
      return "step " + std::to_string(i) + " has " + std::to_string(s.hot_size()) + " hot functions";
    for (const auto& h : s.hot()) {
      if (auto e = check_size(h.function(), l.max_name_bytes, "hot function"); !e.empty()) return e;
      if (auto e = check_size(h.module(), l.max_name_bytes, "hot function module"); !e.empty()) return e;
    }
    if (s.stack().frames_size() > kMaxStackFrames)
      return "step " + std::to_string(i) + " has a stack of " + std::to_string(s.stack().frames_size()) + " frames";
    for (const auto& f : s.stack().frames()) {
      if (auto e = check_size(f.function(), l.max_name_bytes, "frame function"); !e.empty()) return e;
      if (auto e = check_size(f.module(), l.max_name_bytes, "frame module"); !e.empty()) return e;
    }
  }
  if (static_cast<size_t>(tx.cpu_stacks_size()) > kMaxCpuStacks)
    return "transaction has " + std::to_string(tx.cpu_stacks_size()) + " CPU stacks";
  for (const auto& c : tx.cpu_stacks())
    if (auto e = check_size(c.folded(), l.max_text_bytes, "CPU stack"); !e.empty()) return e;
  for (const auto& m : tx.summary()) {
    if (!known_kind(m.kind())) return "summary has unknown kind " + std::to_string(m.kind());
    if (auto e = check_size(m.text(), l.max_text_bytes, "summary text"); !e.empty()) return e;
  }
  return {};
}

}  // namespace

const char* to_string(DecodeStatus s) {
  switch (s) {
    case DecodeStatus::kOk: return "ok";
    case DecodeStatus::kOversize: return "oversize";
    case DecodeStatus::kMalformed: return "malformed";
    case DecodeStatus::kInvalid: return "invalid";
  }
  return "?";
}

std::string validate_batch(const v1::Batch& b, const Limits& l) {
  if (!b.has_agent()) return "batch has no agent";
  const auto& a = b.agent();
  if (a.instance_id() == 0) return "agent instance_id is 0";
  for (auto [s, what] : {std::pair{&a.host(), "host"}, {&a.program(), "program"}, {&a.app(), "app"},
                         {&a.agent_version(), "agent_version"}, {&a.mode(), "mode"}}) {
    if (auto e = check_size(*s, l.max_name_bytes, what); !e.empty()) return e;
  }
  if (auto e = check_size(a.command_line(), l.max_text_bytes, "command_line"); !e.empty()) return e;
  if (auto e = check_size(a.cpu_sampler(), l.max_name_bytes, "cpu_sampler"); !e.empty()) return e;
  for (const auto& tx : b.transactions()) {
    if (auto e = validate_transaction(tx, l); !e.empty()) return e;
  }
  // An agent carries a few (its open windows and the closed ones not yet delivered twice).
  if (b.drop_windows_size() > kMaxDropWindows)
    return "batch has " + std::to_string(b.drop_windows_size()) + " drop windows (limit " +
           std::to_string(kMaxDropWindows) + ")";
  // (2^62: far past any real agent, and the writer's running count stays clear of overflow.)
  if (b.sent_transactions() > (uint64_t(1) << 62)) return "sent_transactions out of range";
  for (const auto& w : b.drop_windows()) {
    if (w.seq() == 0 || w.seq() > static_cast<uint64_t>(INT64_MAX)) return "drop window seq out of range";
    if (w.count() > static_cast<uint64_t>(INT64_MAX) || w.first_unix_ns() > static_cast<uint64_t>(INT64_MAX) ||
        w.last_unix_ns() > static_cast<uint64_t>(INT64_MAX))
      return "drop window count/times out of range";
  }
  // Counts of sampled-out transactions (head sampling): one entry per (name, minute, bucket) since the
  // agent's previous batch. Only the collector marks entries as its own (load shedding).
  if (b.sampled_out_size() > kMaxShedCounts)
    return "batch has " + std::to_string(b.sampled_out_size()) + " sampled-out counts (limit " +
           std::to_string(kMaxShedCounts) + ")";
  for (const auto& c : b.sampled_out()) {
    if (c.by_collector()) return "a sampled-out count claims to be the collector's own";
    if (auto e = check_size(c.name(), l.max_name_bytes, "sampled-out name"); !e.empty()) return e;
    if (auto e = check_size(c.kind(), l.max_name_bytes, "sampled-out kind"); !e.empty()) return e;
    if (c.bucket() >= v1::kShedBuckets) return "sampled-out bucket " + std::to_string(c.bucket()) + " out of range";
    if (c.count() > (uint64_t(1) << 40) || c.elapsed_ns() > static_cast<uint64_t>(INT64_MAX) ||
        c.minute_unix_ns() > static_cast<uint64_t>(INT64_MAX))
      return "sampled-out count/times out of range";
  }
  return {};
}

size_t estimate_decoded_bytes(const void* data, size_t size) {
  size_t cost = 0;
  auto* p = static_cast<const uint8_t*>(data);
  return scan(Msg::batch, p, p + size, &cost) ? cost : SIZE_MAX;
}

uint64_t truncate_fields(v1::Batch& b, const Limits& l, std::string* first) {
  Truncator t{l, first};
  if (b.has_agent()) {
    auto* a = b.mutable_agent();
    t.cut(a->mutable_host(), l.max_name_bytes, "host");
    t.cut(a->mutable_program(), l.max_name_bytes, "program");
    t.cut(a->mutable_app(), l.max_name_bytes, "app");
    t.cut(a->mutable_agent_version(), l.max_name_bytes, "agent_version");
    t.cut(a->mutable_mode(), l.max_name_bytes, "mode");
    t.cut(a->mutable_command_line(), l.max_text_bytes, "command_line");
    t.cut(a->mutable_cpu_sampler(), l.max_name_bytes, "cpu_sampler");
  }
  for (auto& tx : *b.mutable_transactions()) {
    t.cut(tx.mutable_name(), l.max_name_bytes, "transaction name");
    t.cut(tx.mutable_client_addr(), l.max_name_bytes, "client_addr");
    t.cut(tx.mutable_kind(), l.max_name_bytes, "transaction kind");
    t.cut(tx.mutable_error(), l.max_text_bytes, "transaction error");
    t.attributes(tx.mutable_attributes(), "transaction");
    for (auto& s : *tx.mutable_steps()) {
      t.cut(s.mutable_text(), l.max_text_bytes, "step text");
      t.cut(s.mutable_error(), l.max_text_bytes, "step error");
      t.attributes(s.mutable_attributes(), "step");
      for (auto& h : *s.mutable_hot()) {
        t.cut(h.mutable_function(), l.max_name_bytes, "hot function");
        t.cut(h.mutable_module(), l.max_name_bytes, "hot function module");
      }
      if (s.has_stack())
        for (auto& f : *s.mutable_stack()->mutable_frames()) {
          t.cut(f.mutable_function(), l.max_name_bytes, "frame function");
          t.cut(f.mutable_module(), l.max_name_bytes, "frame module");
        }
    }
    for (auto& c : *tx.mutable_cpu_stacks()) t.cut(c.mutable_folded(), l.max_text_bytes, "CPU stack");
    for (auto& m : *tx.mutable_summary()) t.cut(m.mutable_text(), l.max_text_bytes, "summary text");
  }
  for (auto& c : *b.mutable_sampled_out()) {
    t.cut(c.mutable_name(), l.max_name_bytes, "sampled-out name");
    t.cut(c.mutable_kind(), l.max_name_bytes, "sampled-out kind");
  }
  return t.count;
}

DecodeResult decode_batch(const void* data, size_t size, v1::Batch& out, const Limits& limits) {
  if (size > limits.max_message_bytes)
    return {DecodeStatus::kOversize, std::to_string(size) + " bytes (limit " +
                                         std::to_string(limits.max_message_bytes) + ")"};
  // Before anything is allocated: what parsing would take (and whether the framing holds at all).
  size_t est = estimate_decoded_bytes(data, size);
  if (est == SIZE_MAX)
    return {DecodeStatus::kMalformed, "not a txray.v1.Batch (" + std::to_string(size) + " bytes, bad framing)"};
  if (est > limits.decoded_limit())
    return {DecodeStatus::kOversize, std::to_string(size) + " bytes that would decode to about " +
                                         std::to_string(est >> 20) + " MiB (limit " +
                                         std::to_string(limits.decoded_limit() >> 20) + " MiB)"};
  out.Clear();
  if (!out.ParseFromArray(data, static_cast<int>(size)))
    return {DecodeStatus::kMalformed, "not a txray.v1.Batch (" + std::to_string(size) + " bytes)"};
  // Cutting an over-long field loses less than dropping the batch with it.
  DecodeResult r;
  r.truncated = truncate_fields(out, limits, &r.reason);
  if (auto e = validate_batch(out, limits); !e.empty()) return {DecodeStatus::kInvalid, e};
  // Last: on a batch known to be stored, its strings already within their limits (a mask only shortens).
  if (limits.redact) r.masked = limits.redact->mask_batch(out, &r.masked_first);
  return r;
}

void silence_protobuf_logging() {
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level, const char*, int, const std::string&) {
    (void)level;  // parse problems are counted by the caller; nothing else logs here
  });
}

}  // namespace txray::ingest
