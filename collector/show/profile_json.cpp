#include "profile_json.h"

#include <cstdlib>

#include "ids.h"

namespace txray::show {

namespace {

nlohmann::ordered_json attributes_object(const Attributes& attrs) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [k, v] : attrs) o[k] = v;
  return o;
}

}  // namespace

nlohmann::ordered_json step_json(const Step& s) {
  nlohmann::ordered_json j;
  j["no"] = s.no;
  j["parent"] = s.parent;
  j["kind"] = s.kind;
  j["start_offset_ns"] = s.start_offset_ns;
  j["gap_ns"] = s.gap_ns;
  j["cpu_ns"] = s.cpu_ns;
  j["elapsed_ns"] = s.elapsed_ns;
  j["bytes_read"] = s.bytes_read;
  j["bytes_written"] = s.bytes_written;
  j["text"] = s.text;
  j["error"] = s.error;
  if (s.rows) j["rows"] = *s.rows;
  if (s.fetch_ns) j["fetch_ns"] = *s.fetch_ns;
  if (s.fingerprint) j["fingerprint"] = hex16(*s.fingerprint);
  if (s.status) j["status"] = *s.status;
  if (s.changes) j["changes"] = *s.changes;
  if (s.id) j["id"] = hex16(*s.id);
  if (!s.attributes.empty()) j["attributes"] = attributes_object(s.attributes);
  if (s.cpu_samples > 0) {
    j["cpu_samples"] = s.cpu_samples;
    nlohmann::ordered_json hot = nlohmann::ordered_json::array();
    for (const auto& h : s.hot) hot.push_back({{"function", h.function}, {"module", h.module}, {"samples", h.samples}});
    j["hot"] = std::move(hot);
  }
  if (!s.stack.empty()) {  // a failed or slow step's stack, innermost first (docs/stacks.md)
    nlohmann::ordered_json frames = nlohmann::ordered_json::array();
    for (const auto& f : s.stack)
      frames.push_back({{"function", f.function}, {"module", f.module}, {"offset", f.offset}});
    j["stack"] = std::move(frames);
  }
  if (s.kind == "HTTP_CALL") {
    j["url"] = s.text;
    if (s.id) j["span_id"] = hex16(*s.id);
    if (s.callee_txid) j["callee_txid"] = hex16(*s.callee_txid);
    if (const std::string* rpc = s.attribute("rpc"); rpc && *rpc == "grpc") {
      j["rpc"] = "grpc";
      if (const std::string* g = s.attribute("grpc_status")) j["grpc_status"] = std::atoi(g->c_str());
    }
  } else if (s.kind == "DNS") {
    j["host"] = s.text;
  }
  return j;
}

nlohmann::ordered_json transaction_json(const Transaction& t) {
  nlohmann::ordered_json j;
  j["txid"] = hex16(t.txid);
  j["guid"] = t.trace_id;
  j["trace_id"] = t.trace_id;
  j["span_id"] = hex16(t.txid);
  j["parent_span_id"] = hex16(t.parent_span_id);
  j["app"] = t.app;
  j["host"] = t.agent.host;
  j["pid"] = t.agent.pid;
  j["program"] = t.agent.program;
  j["agent_instance"] = hex16(t.agent.instance_id);
  j["name"] = t.name;
  j["kind"] = t.kind;
  j["start_unix_ns"] = t.start_unix_ns;
  j["end_unix_ns"] = t.end_unix_ns;
  j["elapsed_ns"] = t.elapsed_ns;
  j["cpu_ns"] = t.cpu_ns;
  j["sql_ns"] = t.sql_ns;
  j["fetch_ns"] = t.fetch_ns;
  j["call_ns"] = t.call_ns;
  j["sql_count"] = t.sql_count;
  j["call_count"] = t.call_count;
  j["status"] = t.status;
  j["error"] = t.error;
  j["client_addr"] = t.client_addr;
  j["bytes_read"] = t.bytes_read;
  j["bytes_written"] = t.bytes_written;
  j["tid"] = t.tid;
  j["attributes"] = attributes_object(t.attributes);
  // The agent's own cost (an estimate; null when the agent sent none).
  if (t.agent_cost_ns) {
    j["agent_cost_ns"] = *t.agent_cost_ns;
    j["agent_thread_ns"] = t.agent_thread_ns;
  } else {
    j["agent_cost_ns"] = nullptr;
  }
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const auto& s : t.steps) steps.push_back(step_json(s));
  j["steps"] = std::move(steps);
  nlohmann::ordered_json summary = nlohmann::ordered_json::array();
  for (const auto& m : t.summary) {
    nlohmann::ordered_json o;
    o["kind"] = m.kind;
    o["fingerprint"] = hex16(m.fingerprint);
    o["text"] = m.text;
    o["count"] = m.count;
    o["elapsed_ns"] = m.elapsed_ns;
    o["rows"] = m.rows ? nlohmann::ordered_json(*m.rows) : nlohmann::ordered_json(nullptr);
    o["errors"] = m.errors;
    o["bytes_read"] = m.bytes_read;
    o["bytes_written"] = m.bytes_written;
    summary.push_back(std::move(o));
  }
  j["summary"] = std::move(summary);
  if (t.cpu_samples > 0 || t.cpu_samples_dropped > 0) {
    j["cpu_samples"] = t.cpu_samples;
    j["cpu_samples_dropped"] = t.cpu_samples_dropped;
    nlohmann::ordered_json stacks = nlohmann::ordered_json::array();
    for (const auto& c : t.cpu_stacks) stacks.push_back({{"folded", c.folded}, {"samples", c.samples}});
    j["cpu_stacks"] = std::move(stacks);
  }
  if (!t.cpu_sampler.empty()) j["cpu_sampler"] = t.cpu_sampler;
  if (t.agent_cpu_samples_lost > 0 || t.agent_stacks_missed > 0) {  // the process's totals (agent_losses)
    j["agent_cpu_samples_lost"] = t.agent_cpu_samples_lost;
    j["agent_stacks_missed"] = t.agent_stacks_missed;
  }
  return j;
}

}  // namespace txray::show
