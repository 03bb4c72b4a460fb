#include "unattributed.h"

#include <algorithm>

#include "ids.h"
#include "profile_json.h"
#include "profile_text.h"
#include "show_format.h"

namespace txray::show {

namespace {

std::string one_line(const std::string& s) {
  std::string out = s;
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  return out;
}

nlohmann::ordered_json common(const Transaction& c) {
  nlohmann::ordered_json j;
  j["app"] = c.app;
  j["agent"] = hex16(c.agent.instance_id);
  j["pid"] = c.agent.pid;
  j["host"] = c.agent.host;
  j["program"] = c.agent.program;
  j["container_tx_id"] = hex16(c.txid);
  return j;
}

}  // namespace

std::string unattributed_header(const Agent& agent, const std::string& app,
                                const std::vector<UnattributedCount>& counts) {
  std::vector<const UnattributedCount*> order;
  int64_t total = 0;
  for (const auto& u : counts) {
    order.push_back(&u);
    total += u.count;
  }
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->count > b->count; });
  std::string by_kind;
  for (const auto* u : order) by_kind += (by_kind.empty() ? "" : ", ") + u->kind + " " + thousands(u->count);
  return "UNATTRIBUTED  app=" + app + "  " + thousands(total) + (total == 1 ? " step: " : " steps: ") + by_kind +
         "  (pid " + std::to_string(agent.pid) + ", " + agent.program + " on " + agent.host + ")\n";
}

std::string unattributed_lines(const Transaction& c, const std::string& indent) {
  std::string out;
  for (const auto& s : c.steps) {
    if (!is_unattributed_step(s.kind)) continue;
    out += indent + date_time(c.start_unix_ns + s.start_offset_ns) + "  " + step_message(s) + '\n';
  }
  for (const auto& m : c.summary) {
    if (!is_unattributed_step(m.kind)) continue;
    out += indent + date_time(c.start_unix_ns) + "  " + m.kind + " x" + thousands(m.count) + " [" +
           ms_elapsed(m.elapsed_ns) + " ms] (folded past the step limit)";
    if (m.errors) out += " errors=" + thousands(m.errors);
    if (!m.text.empty()) out += "  " + one_line(m.text);
    out += '\n';
  }
  return out;
}

std::vector<nlohmann::ordered_json> unattributed_json(const Transaction& c) {
  std::vector<nlohmann::ordered_json> out;
  for (const auto& s : c.steps) {
    if (!is_unattributed_step(s.kind)) continue;
    nlohmann::ordered_json j = common(c);
    j["no"] = s.no;
    j["kind"] = s.kind;
    j["text"] = s.text;
    j["start_unix_ns"] = c.start_unix_ns + s.start_offset_ns;
    j["elapsed_ns"] = s.elapsed_ns;
    j["elapsed_ms"] = static_cast<double>(s.elapsed_ns) / 1e6;
    j["status"] = s.status ? nlohmann::ordered_json(*s.status) : nlohmann::ordered_json(nullptr);
    j["error"] = s.error;
    j["callee_tx_id"] = s.callee_txid ? nlohmann::ordered_json(hex16(*s.callee_txid)) : nlohmann::ordered_json(nullptr);
    j["count"] = 1;
    j["folded"] = false;
    const nlohmann::ordered_json rest = step_json(s);
    for (const auto& [k, v] : rest.items())
      if (!j.contains(k) && k != "callee_txid") j[k] = v;
    out.push_back(std::move(j));
  }
  for (const auto& m : c.summary) {
    if (!is_unattributed_step(m.kind)) continue;
    nlohmann::ordered_json j = common(c);
    j["no"] = nullptr;
    j["kind"] = m.kind;
    j["text"] = m.text;
    j["start_unix_ns"] = c.start_unix_ns;
    j["elapsed_ns"] = m.elapsed_ns;
    j["elapsed_ms"] = static_cast<double>(m.elapsed_ns) / 1e6;
    j["status"] = nullptr;
    j["error"] = "";
    j["callee_tx_id"] = nullptr;
    j["count"] = m.count;
    j["folded"] = true;
    j["errors"] = m.errors;
    if (m.fingerprint) j["fingerprint"] = hex16(m.fingerprint);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace txray::show
