#include "decoder.h"

#include <google/protobuf/stubs/logging.h>

namespace txray::ingest {

namespace {

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

bool known_kind(int k) { return k >= v1::START && k <= v1::DNS; }

std::string validate_transaction(const v1::Transaction& tx, const Limits& l) {
  if (tx.trace_id().size() != 0 && tx.trace_id().size() != 16)
    return "trace_id has " + std::to_string(tx.trace_id().size()) + " bytes (expected 0 or 16)";
  for (auto [s, what] : {std::pair{&tx.name(), "transaction name"}, {&tx.client_addr(), "client_addr"},
                         {&tx.kind(), "transaction kind"}}) {
    if (auto e = check_size(*s, l.max_name_bytes, what); !e.empty()) return e;
  }
  if (auto e = check_size(tx.error(), l.max_text_bytes, "transaction error"); !e.empty()) return e;
  if (auto e = check_attributes(tx.attributes(), l, "transaction"); !e.empty()) return e;
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
  }
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
  for (const auto& tx : b.transactions()) {
    if (auto e = validate_transaction(tx, l); !e.empty()) return e;
  }
  return {};
}

DecodeResult decode_batch(const void* data, size_t size, v1::Batch& out, const Limits& limits) {
  if (size > limits.max_message_bytes)
    return {DecodeStatus::kOversize, std::to_string(size) + " bytes (limit " +
                                         std::to_string(limits.max_message_bytes) + ")"};
  out.Clear();
  if (!out.ParseFromArray(data, static_cast<int>(size)))
    return {DecodeStatus::kMalformed, "not a txray.v1.Batch (" + std::to_string(size) + " bytes)"};
  if (auto e = validate_batch(out, limits); !e.empty()) return {DecodeStatus::kInvalid, e};
  return {};
}

void silence_protobuf_logging() {
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level, const char*, int, const std::string&) {
    (void)level;  // parse problems are counted by the caller; nothing else logs here
  });
}

}  // namespace txray::ingest
