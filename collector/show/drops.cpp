#include "drops.h"

#include <cstdio>

#include "ids.h"
#include "show_format.h"

namespace txray::show {

namespace {

std::string seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", double(ns) / 1e9);
  return buf;
}

int64_t total(const std::vector<DropWindowRow>& windows) {
  int64_t n = 0;
  for (const auto& w : windows) n += w.count;
  return n;
}

}  // namespace

std::string drops_text(const std::vector<DropWindowRow>& windows) {
  std::string out = "DROPPED  " + thousands(total(windows)) + " transactions in " + thousands(int64_t(windows.size())) +
                    (windows.size() == 1 ? " window\n" : " windows\n");
  for (const auto& w : windows) {
    std::string first = date_time(w.first_unix_ns), last = date_time(w.last_unix_ns);
    // The last drop's date only when it differs from the first's.
    if (last.compare(0, 10, first, 0, 10) == 0) last = last.substr(11);
    out += "  " + w.agent.app + "  pid " + std::to_string(w.agent.pid) + "  " + w.reason + "  " + thousands(w.count) +
           "  " + first + " .. " + last + "  (" + seconds(w.last_unix_ns - w.first_unix_ns) + ")  " +
           (w.closed ? "closed" : "open") + "\n";
  }
  return out;
}

std::string drops_note(const std::vector<DropWindowRow>& windows) {
  return "drops: " + thousands(total(windows)) + " transactions in " + thousands(int64_t(windows.size())) +
         (windows.size() == 1 ? " window" : " windows") + " (txray show --drops)\n";
}

nlohmann::ordered_json drop_window_json(const DropWindowRow& w) {
  nlohmann::ordered_json j;
  j["app"] = w.agent.app;
  j["agent"] = hex16(w.agent.instance_id);
  j["pid"] = w.agent.pid;
  j["host"] = w.agent.host;
  j["program"] = w.agent.program;
  j["seq"] = w.seq;
  j["reason"] = w.reason;
  j["count"] = w.count;
  j["first_unix_ns"] = w.first_unix_ns;
  j["last_unix_ns"] = w.last_unix_ns;
  j["first"] = date_time(w.first_unix_ns);
  j["last"] = date_time(w.last_unix_ns);
  j["seconds"] = double(w.last_unix_ns - w.first_unix_ns) / 1e9;
  j["closed"] = w.closed;
  j["reported_unix_ns"] = w.reported_unix_ns;
  return j;
}

}  // namespace txray::show
