// A stage fed from the same decoded batches as the store, beside it (the OTLP exporter:
// collector/otlp/). It gets every batch the receiver accepted, as received; it must never make the
// receiver wait — it copies and queues, and when its own bounded queue is full it drops and counts.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "txray/v1/txray.pb.h"

namespace txray::ingest {

class BatchTap {
 public:
  virtual ~BatchTap() = default;
  // Receiving thread, once per accepted message: its bytes and the batch decoded from them (valid during
  // the call only).
  virtual void offer(const void* data, size_t size, const v1::Batch& decoded) = 0;
  // Appended to the collector's status line (", otlp: …"); any thread.
  virtual std::string status() const = 0;
  // At stop, after the store has everything: deliver what is queued, for at most `bound`.
  virtual void finish(std::chrono::milliseconds bound) = 0;
};

}  // namespace txray::ingest
