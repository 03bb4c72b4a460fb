// Decoding and validating one ZeroMQ message from an agent (one serialized txray.v1.Batch). Everything
// the store's writer relies on is checked here, so that the writer never sees a batch it cannot store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "txray/v1/txray.pb.h"

namespace txray::ingest {

struct Limits {
  size_t max_message_bytes = 64u << 20;  // larger messages are rejected unparsed
  size_t max_name_bytes = 4096;          // transaction name, app, host, program, client address, ids
  size_t max_text_bytes = 1u << 20;      // step text, error, command line, attribute values
  size_t max_attributes = 256;           // per transaction or step
  size_t max_steps = 1u << 20;           // per transaction
};

enum class DecodeStatus {
  kOk,
  kOversize,   // bigger than max_message_bytes
  kMalformed,  // not a parsable Batch
  kInvalid,    // parsed, but breaks a rule of the wire format (see validate_batch)
};

const char* to_string(DecodeStatus s);

struct DecodeResult {
  DecodeStatus status = DecodeStatus::kOk;
  std::string reason;  // why it was rejected, for the collector's log
  bool ok() const { return status == DecodeStatus::kOk; }
};

// Parses and validates; `out` is only meaningful when the result is ok.
DecodeResult decode_batch(const void* data, size_t size, v1::Batch& out, const Limits& limits = {});

// The rules (docs/wire-format.md): an agent with a non-zero instance id; every step kind known; a step's
// parent is -1 or an earlier step of the same transaction; trace ids are empty or 16 bytes; string sizes
// and counts within the limits. Returns "" when the batch is valid, otherwise the first broken rule.
std::string validate_batch(const v1::Batch& batch, const Limits& limits = {});

// protobuf prints a line to stderr for each string with invalid UTF-8 it refuses; a collector that
// faces arbitrary senders counts those messages instead. Call once at start-up.
void silence_protobuf_logging();

}  // namespace txray::ingest
