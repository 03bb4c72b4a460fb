#include "stage.h"

#include <cinttypes>
#include <cstdio>

namespace txray::metrics {

namespace {
void line(std::string& out, bool om, const char* name, const char* type, const char* help, uint64_t v,
          const char* labels = "") {
  std::string fam = name;
  if (om && std::string_view(type) == "counter") fam.resize(fam.size() - 6);  // without _total
  char b[512];
  std::snprintf(b, sizeof b, "# HELP %s %s\n# TYPE %s %s\n%s%s %" PRIu64 "\n", fam.c_str(), help, fam.c_str(), type, name,
                labels, v);
  out += b;
}
}  // namespace

std::string render_health(const ingest::CollectStats& s, bool om, uint64_t scrapes, uint64_t refused) {
  std::string o;
  uint64_t recv = s.received_tx, stored = s.stored_tx, shed = s.shed_tx, lost = s.lost_tx;
  line(o, om, "txray_collector_messages_total", "counter", "Agent messages received.", s.messages);
  line(o, om, "txray_collector_received_transactions_total", "counter", "Transactions in accepted batches.", recv);
  line(o, om, "txray_collector_stored_transactions_total", "counter", "Transactions stored.", stored);
  line(o, om, "txray_collector_shed_transactions_total", "counter",
       "Transactions only counted under load (load shedding); they are in every request figure.", shed);
  line(o, om, "txray_collector_lost_transactions_total", "counter", "Accepted but not stored (SQLite failed).", lost);
  line(o, om, "txray_collector_agent_dropped_transactions_total", "counter",
       "Transactions the agents report they dropped (queue full, send failed).", s.agent_drops);
  line(o, om, "txray_collector_agent_sampled_out_transactions_total", "counter",
       "Transactions the agents' head sampling only counted.", s.agent_sampled_out);
  std::string fam = om ? "txray_collector_rejected_messages" : "txray_collector_rejected_messages_total";
  char b[640];
  std::snprintf(b, sizeof b,
                "# HELP %s Agent messages dropped, by reason.\n# TYPE %s counter\n"
                "txray_collector_rejected_messages_total{reason=\"malformed\"} %" PRIu64
                "\ntxray_collector_rejected_messages_total{reason=\"invalid\"} %" PRIu64
                "\ntxray_collector_rejected_messages_total{reason=\"oversize\"} %" PRIu64 "\n",
                fam.c_str(), fam.c_str(), s.malformed.load(), s.invalid.load(), s.oversize.load());
  o += b;
  uint64_t done = stored + shed + lost;
  line(o, om, "txray_collector_store_lag_transactions", "gauge", "Transactions received and not yet stored.",
       recv > done ? recv - done : 0);
  line(o, om, "txray_collector_disk_full", "gauge", "1 while the writer waits for disk space.",
       s.disk_full_since_ns.load() != 0 ? 1 : 0);
  line(o, om, "txray_collector_shed_share_percent", "gauge", "Share of sheddable transactions shed at the last batch.",
       s.shed_share_pct);
  line(o, om, "txray_collector_refused_peers_total", "counter", "Connections whose ZeroMQ handshake failed.",
       s.refused_peers);
  line(o, om, "txray_collector_truncated_fields_total", "counter", "Fields cut to their limit.", s.truncated_fields);
  line(o, om, "txray_collector_masked_values_total", "counter", "Values masked as credentials.", s.masked_values);
  line(o, om, "txray_metrics_scrapes_total", "counter", "Requests served by the metrics endpoint.", scrapes);
  line(o, om, "txray_metrics_refused_requests_total", "counter",
       "Metrics connections closed without an answer or with an error (bad, too large, too slow).", refused);
  return o;
}

bool MetricsStage::start(const ServerOptions& opts, std::string* why) {
  return server_.start(opts, [this](bool om) { return render(om); }, why);
}

std::string MetricsStage::render(bool om) const {
  return agg_.render(om, stats_ ? render_health(*stats_, om, server_.requests(), server_.refused()) : std::string());
}

void MetricsStage::offer(const void* data, size_t size, const v1::Batch& decoded) {
  agg_.add(decoded);
  if (next_) next_->offer(data, size, decoded);
}

void MetricsStage::finish(std::chrono::milliseconds bound) {
  if (next_) next_->finish(bound);
}

}  // namespace txray::metrics
