// Decoding and validating one ZeroMQ message from an agent (one serialized txray.v1.Batch). Everything
// the store's writer relies on is checked here, so that the writer never sees a batch it cannot store.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "redact.h"
#include "txray/v1/txray.pb.h"

namespace txray::ingest {

// Per-message and per-field limits: what a sender (a broken or hostile agent) can make the collector
// hold. docs/wire-format.md lists them with what happens past each.
// Drop windows per batch (an agent sends a few: DropWindows::kMaxClosed closed ones and its open ones).
inline constexpr int kMaxDropWindows = 256;
// Sampled-out counts (ShedCount) per batch: an agent sends one per (name, minute, bucket) since its last batch.
inline constexpr int kMaxShedCounts = 65536;
// Frames of one step's stack (an agent sends at most 32): more makes the batch invalid.
inline constexpr int kMaxStackFrames = 256;

struct Limits {
  size_t max_message_bytes = 64u << 20;  // larger messages are rejected unparsed (oversize)
  // The decoded size, estimated from the wire before parsing: a message of tiny repeated fields
  // (a 2-byte empty step decodes to a ~150-byte object) is rejected unparsed (oversize) past this.
  // 0: four times max_message_bytes, at least 64 MiB (small batches decode to several times their size).
  size_t max_decoded_bytes = 0;
  size_t max_name_bytes = 4096;          // transaction name, app, host, program, client address, keys: truncated
  size_t max_text_bytes = 1u << 20;      // step text, error, command line, attribute values: truncated
  size_t max_attributes = 256;           // per transaction or step: the rest dropped, counted in one attribute
  size_t max_steps = 1u << 20;           // per transaction: more makes the message invalid
  // Values that look like credentials are masked after the checks (redact.h); none: kept as sent
  // (`txray collect --no-redact`). Here rather than beside the limits so that every decode of a
  // message — the store's and the OTLP exporter's own — masks the same values.
  std::shared_ptr<const Redactor> redact = Redactor::defaults();
  size_t decoded_limit() const {
    return max_decoded_bytes ? max_decoded_bytes : std::max<size_t>(4 * max_message_bytes, 64u << 20);
  }
};

// Appended to a string cut to its limit (the result, marker included, fits the limit).
inline constexpr const char* kTruncatedMarker = "\xe2\x80\xa6[truncated from ";  // "…[truncated from N bytes]"

enum class DecodeStatus {
  kOk,
  kOversize,   // bigger than max_message_bytes
  kMalformed,  // not a parsable Batch
  kInvalid,    // parsed, but breaks a rule of the wire format (see validate_batch)
};

const char* to_string(DecodeStatus s);

struct DecodeResult {
  DecodeStatus status = DecodeStatus::kOk;
  std::string reason;      // why it was rejected; for an accepted batch, the first field truncated
  uint64_t truncated = 0;  // fields cut to their limit, lists of attributes cut to theirs
  uint64_t masked = 0;     // values masked as credentials (Limits::redact)
  std::string masked_first = {};  // where the first masked value was (never the value)
  bool ok() const { return status == DecodeStatus::kOk; }
};

// The memory that parsing this message would take, estimated from its wire form without allocating:
// the objects of every nested message and every string. SIZE_MAX when the bytes are not well-formed
// protobuf.
size_t estimate_decoded_bytes(const void* data, size_t size);

// Cuts every over-long string of the batch to its limit with a marker, and attribute lists past
// max_attributes; returns how many were cut and, in *first, a description of the first one.
uint64_t truncate_fields(v1::Batch& batch, const Limits& limits, std::string* first = nullptr);

// Parses, truncates, validates and masks; `out` is only meaningful when the result is ok.
DecodeResult decode_batch(const void* data, size_t size, v1::Batch& out, const Limits& limits = {});

// The rules (docs/wire-format.md): an agent with a non-zero instance id; every step kind known; a step's
// parent is -1 or an earlier step of the same transaction; trace ids are empty or 16 bytes; string sizes
// and counts within the limits (truncate_fields makes them so). Returns "" when the batch is valid,
// otherwise the first broken rule.
std::string validate_batch(const v1::Batch& batch, const Limits& limits = {});

// protobuf prints a line to stderr for each string with invalid UTF-8 it refuses; a collector that
// faces arbitrary senders counts those messages instead. Call once at start-up.
void silence_protobuf_logging();

}  // namespace txray::ingest
