// `collect --metrics-listen`: the metrics stage beside the store. It is the collector's tap
// (ingest/batch_tap.h) and hands on to the next one (the OTLP export) when there is one, so both see the
// same decoded batches; it serves the aggregate on its own HTTP thread (server.h).
#pragma once

#include <memory>
#include <string>

#include "aggregator.h"
#include "batch_tap.h"
#include "collect_service.h"
#include "server.h"

namespace txray::metrics {

// The collector's own figures (those of its status line) as metrics, in the given format.
std::string render_health(const ingest::CollectStats& s, bool openmetrics, uint64_t scrapes, uint64_t refused);

class MetricsStage : public ingest::BatchTap {
 public:
  MetricsStage(MetricsLimits limits, const ingest::CollectStats* stats, ingest::BatchTap* next)
      : agg_(limits), stats_(stats), next_(next) {}
  bool start(const ServerOptions& opts, std::string* why);
  void offer(const void* data, size_t size, const v1::Batch& decoded) override;
  std::string status() const override { return next_ ? next_->status() : std::string(); }
  void finish(std::chrono::milliseconds bound) override;
  uint16_t port() const { return server_.port(); }
  std::string render(bool openmetrics) const;

 private:
  Aggregator agg_;
  const ingest::CollectStats* stats_;
  ingest::BatchTap* next_;
  Server server_;
};

}  // namespace txray::metrics
